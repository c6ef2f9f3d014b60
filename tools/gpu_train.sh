#!/usr/bin/env bash
# Train the bundled model's successor on a GPU machine, in one command, from the repository root:
#
#     OUT=/path/to/results bash tools/gpu_train.sh
#
# 1. builds the corpus from that machine's own Python environment (tools/build_corpus.py);
# 2. runs tools/train_gpu.py for a few seconds in its tiny configuration, and stops if that fails
#    (or if the tiny model does not load and generate);
# 3. trains for the rest of the budget (BUDGET_S, 570 s for the whole command by default), writing
#    a checkpoint about every minute into $OUT/model;
# 4. leaves in $OUT at most 8 files, none over 16 MiB: model/ (the bf16 safetensors shards, their
#    index, config.json, training.json), manifest.json (the corpus) and train.log (everything
#    printed). The tokenizer is tools/tokenizer-16k, in the tree.
#
# GPU_TRAIN_TINY=1 runs the same steps with tiny sizes on the CPU (the test of this script).
# PYTHON (python3), WORK (a temporary folder), TRAIN_ARGS (more tools/train_gpu.py options for the
# main run), SMOKE_ARGS (for the smoke run) and CORPUS_ARGS (more tools/build_corpus.py options)
# may be set.
set -euo pipefail
T0=$(date +%s)
: "${OUT:?set OUT to the folder the results go to}"
PY=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-570}
WORK=${WORK:-$(mktemp -d)}
TINY=${GPU_TRAIN_TINY:-0}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
exec > >(tee -a "$OUT/train.log") 2>&1
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true

say() { echo "[gpu_train $(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( T0 + BUDGET_S - $(date +%s) )); }

say "python: $($PY -c 'import sys, torch, transformers; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available())')"
command -v nvidia-smi >/dev/null && nvidia-smi -L || true
say "cores: $(nproc); work folder: $WORK"

if [ "$TINY" = 1 ]; then
  CORPUS=(--max-files 80 --jobs 2)
  SMOKE=(--device cpu --threads 1 --max-steps 3 --save-every-s 100)
  MAIN=(--tiny --device cpu --threads 1 --max-steps 6 --save-every-s 0 --reserve-s 0)
else
  CORPUS=()
  SMOKE=()
  MAIN=()
fi

say "building the corpus"
# shellcheck disable=SC2086
$PY tools/build_corpus.py --out "$WORK/corpus" "${CORPUS[@]}" ${CORPUS_ARGS:-}
cp "$WORK/corpus/manifest.json" "$OUT/manifest.json"

say "smoke run: the tiny configuration for a few steps (tokenizes the corpus for both runs)"
# shellcheck disable=SC2086
timeout 240 $PY tools/train_gpu.py --tiny --corpus "$WORK/corpus" --out "$WORK/smoke" --minutes 4 \
  --max-steps 40 --save-every-s 5 --reserve-s 0 --compile off "${SMOKE[@]}" ${SMOKE_ARGS:-}
$PY - "$WORK/smoke" <<'EOF'
import sys
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
ids = tok("def add(a, b):\n", return_tensors="pt")
out = model.generate(**ids, max_new_tokens=4, do_sample=False, pad_token_id=tok.eos_token_id)
assert out.shape[1] > ids["input_ids"].shape[1]
print("smoke model loads and generates:", repr(tok.decode(out[0])))
EOF

MINUTES=$($PY -c "print(round(max(0.5, ($(left) - 15) / 60), 2))")
say "training for $MINUTES minutes"
# shellcheck disable=SC2086
timeout $(( $(left) + 20 )) $PY tools/train_gpu.py --corpus "$WORK/corpus" --out "$WORK/model" \
  --export "$OUT/model" --minutes "$MINUTES" "${MAIN[@]}" ${TRAIN_ARGS:-}

say "results:"
find "$OUT" -type f -printf '%s %p\n' | sort -k2
n=$(find "$OUT" -type f | wc -l)
big=$(find "$OUT" -type f -size +16M | wc -l)
say "$n files, $big over 16 MiB"
[ "$n" -le 8 ] && [ "$big" -eq 0 ]
