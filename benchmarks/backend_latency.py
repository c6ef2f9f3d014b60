"""Latency of completing a prompt and its mutants with the local HF backend, as ratios, in one run.

    python benchmarks/backend_latency.py                 # the bundled model, 64 new tokens, k = 10
    python benchmarks/backend_latency.py --threads 2 --repeats 7 --model DIR
    python benchmarks/backend_latency.py --device cuda --model llama135m   # a random-weight shape

Measured side by side (interleaved, median of --repeats rounds):

* plain: one completion of the original prompt;
* one by one: the original and its k mutants, one ``complete`` call each;
* one batch: the same k + 1 prompts in ONE ``complete`` call (one batched ``generate`` over a
  shared-prefix cache);
* one batch, no shared prefix: the same, as a plain left-padded batch (what the prefix cache saves).

Each is run twice: with cctest's stop rules (rows end at their code boundary, the default), and
with a fixed budget (boundaries off: every row generates up to --max-new-tokens unless the model
writes EOS), the worst case. The mutants are real ones from ``cctest.mutators``. The script also
checks that batched and one-by-one greedy outputs are identical.

Two clocks: wall time, and the CPU time this process used (all its threads). On a machine shared
with other work the wall clock swings with their load; the CPU time is the work done, which is
what batching saves (with --threads 1 the two agree on an idle machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repair_latency import model_dir  # noqa: E402

from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend
from cctest.mutators import generate_mutants

# A realistic prompt: a module written up to the middle of a function (about 500 tokens).
PROMPT = '''"""Find and summarise the Python files of a source tree."""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class FileSummary:
    path: str
    lines: int = 0
    functions: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)

    def describe(self):
        return f"{self.path}: {self.lines} lines, {len(self.functions)} functions"


DEF = re.compile(r"^\\s*def\\s+(\\w+)")
CLASS = re.compile(r"^\\s*class\\s+(\\w+)")


def is_python_file(name):
    return name.endswith(".py") and not name.startswith(".")


def summarise(path):
    summary = FileSummary(path)
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            summary.lines += 1
            match = DEF.match(line)
            if match:
                summary.functions.append(match.group(1))
            match = CLASS.match(line)
            if match:
                summary.classes.append(match.group(1))
    return summary


def walk(root):
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]
        for name in sorted(files):
            if is_python_file(name):
                yield os.path.join(directory, name)


def largest_files(root, count):
    summaries = []
    for path in walk(root):
        summary = summarise(path)
        if summary.lines:
            summaries.append(summary)
    summaries.sort(key=lambda item: item.lines, reverse=True)
    top = summaries[:count]
    totals = Counter()
    for rank, summary in enumerate(top, 1):
        totals.update(summary.functions)
        print(f"{rank:3} {summary.describe()}")
    '''


async def timed(backend: HFBackend, batches: list[list[str]]) -> tuple[float, float, list[str]]:
    """Wall-clock and CPU seconds (all threads of this process) of completing the batches."""
    wall, cpu = time.perf_counter(), time.process_time()
    out: list[str] = []
    for batch in batches:
        out.extend(str(x) for x in await backend.complete(batch))
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--model",
        default="bundled",
        help="bundled (default), llama135m or llama1b (random weights of those shapes), or a model directory",
    )
    p.add_argument("-k", "--mutants", type=int, default=10)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1; 0: torch's default)")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = p.parse_args(argv)
    with model_dir(args.model) as path:
        return measure(args, path)


def measure(args: argparse.Namespace, path: Path | None) -> int:
    base = HFBackend(
        path,
        options=GenerationOptions(max_new_tokens=args.max_new_tokens),
        threads=args.threads,
        device=args.device,
        reuse_prefix=False,  # each round repeats the prompt: a kept prefix would skip its prefill
    )
    outcome = generate_mutants(PROMPT, k=args.mutants, seed=0)
    prompts = [PROMPT] + [m.text for m in outcome.mutants]
    n_tokens = len(base.tokenizer(PROMPT, add_special_tokens=False)["input_ids"])
    shared = base.encode(prompts, args.max_new_tokens).prefix
    print(
        f"model: {base.describe()}; torch {torch.__version__}, {torch.get_num_threads()} thread(s); "
        f"{platform.processor() or platform.machine()}; CUDA available: {torch.cuda.is_available()}"
    )
    print(
        f"prompt: {n_tokens} tokens; {len(outcome.mutants)} mutants "
        f"({', '.join(sorted({m.scheme for m in outcome.mutants}))}); shared prefix {shared} tokens; "
        f"max_new_tokens {args.max_new_tokens}; median of {args.repeats} interleaved rounds"
    )
    results: dict[str, dict[str, object]] = {}
    for label, boundaries in (("stop rules on (default)", True), ("fixed budget (boundaries off)", False)):
        backend = base.with_options(boundaries=boundaries)
        no_prefix = base.with_options(boundaries=boundaries, share_prefix=False)
        modes = {
            "plain": (backend, [[PROMPT]]),
            "one by one": (backend, [[p] for p in prompts]),
            "one batch": (backend, [prompts]),
            "one batch, no shared prefix": (no_prefix, [prompts]),
        }
        asyncio.run(timed(backend, [prompts]))  # warm-up
        walls: dict[str, list[float]] = {m: [] for m in modes}
        cpus: dict[str, list[float]] = {m: [] for m in modes}
        outputs: dict[str, list[str]] = {}
        for _ in range(args.repeats):
            for mode, (b, batches) in modes.items():
                wall, cpu, out = asyncio.run(timed(b, batches))
                walls[mode].append(wall)
                cpus[mode].append(cpu)
                outputs[mode] = out
        med = {m: statistics.median(t) for m, t in walls.items()}
        med_cpu = {m: statistics.median(t) for m, t in cpus.items()}
        gens = backend.generate(prompts)
        mean_tokens = sum(g.completion_tokens for g in gens) / len(gens)
        same = outputs["one batch"] == outputs["one by one"] == outputs["one batch, no shared prefix"]
        print(f"\n{label}: mean {mean_tokens:.1f} new tokens per row; batched == one by one: {same}")
        print(f"  {'':<30} {'wall':>9}  {'ratio':>6}   {'CPU':>9}  {'ratio':>6}")
        for mode, seconds in med.items():
            cpu = med_cpu[mode]
            print(
                f"  {mode:<30} {seconds * 1000:7.0f} ms  {seconds / med['plain']:5.2f}x"
                f"   {cpu * 1000:7.0f} ms  {cpu / med_cpu['plain']:5.2f}x"
            )
        results[label] = {m: round(s / med["plain"], 3) for m, s in med.items()} | {
            "cpu_ratios": {m: round(s / med_cpu["plain"], 3) for m, s in med_cpu.items()},  # type: ignore[dict-item]
            "plain_ms": round(med["plain"] * 1000, 1),
            "identical_outputs": float(same),
            "mean_new_tokens": round(mean_tokens, 1),
        }
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
