"""What a repair-mode request costs where people type, as a ratio to a plain completion, in one run.

    python benchmarks/repair_latency.py                          # 20 positions, both models
    python benchmarks/repair_latency.py --positions 2 --models bundled

Seeded random cursor positions inside function bodies of standard-library modules (the sample of
``benchmarks/mutant_supply.py``: the text before the cursor is the prompt, the text after it the
suffix). At each position, interleaved and in alternating order:

* plain: one ``generate`` of the prompt alone (the same model, token budget and threads; with
  the suffix, like the request's rows, where the model fills in the middle);
* cctest: one ``Engine.run`` of the prompt (k mutants, detection, repair), as the editor's
  repair mode waits for it; with several ``--decide-after`` values (``0,8``: every row finished
  before choosing, and the choice made on every row's first 8 tokens), one request per value, and
  likewise per ``--prefill-budget`` value (``0,2``: the mutants chosen with no bound on what their
  rows cost to read, and within 2 times the plain prompt's tokens; every pair of values).

``--no-suffix``: left to right, the prompt alone on both sides (no code after the cursor).
``--seeds``: several seeds, their positions one after another (``--positions`` per seed), each
seed's figures reported on its own and all together. Seeds never used to tune the mutant choice:
7919, 104729 and 1299709 (the figures' older seed is 20231116).

Every call starts cold (``reuse_prefix`` off: no key/value cache kept from the call before, which
at the same position would be the other side's). Boundary stops are off for both (every row writes
``--max-new-tokens`` unless the model ends it with EOS): the worst case, and the same amount of
text on both sides. The ratio is cctest's wall time over plain's at the same position. Printed:
median and p90 of the ratio over the positions that got all k mutants (the figure the target is
about), over every position, and per number of variants (1 + mutants).

Models (``--models``, comma-separated):

* ``bundled``: the bundled model;
* ``llama135m``: a Llama-shaped model of SmolLM-135M's shape (30 layers, hidden 576, 9 heads /
  3 key-value heads, intermediate 1536, context 2048) built from a config with random weights in
  a temporary directory, with the bundled tokenizer (no download);
* ``llama1b``: the same, of TinyLlama-1.1B's shape (22 layers, hidden 2048, 32 heads / 4
  key-value heads, intermediate 5632), for a GPU (``--device cuda``);
* or a model directory.

Two clocks: wall time, and the CPU time this process used (all its threads). On a machine shared
with other work the wall clock swings with their load (ratios are taken between neighbouring
measurements at the same position, which cancels some of it); the CPU time is the work done.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _busy import busy  # noqa: E402
from mutant_supply import stdlib_positions  # noqa: E402

from cctest.backends import run_on_model_thread  # noqa: E402
from cctest.backends.base import GenerationOptions  # noqa: E402
from cctest.backends.hf import HFBackend  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402
from cctest.types import Prompt  # noqa: E402

SMOLLM_135M_SHAPE: dict[str, Any] = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": True,
}
# TinyLlama-1.1B's shape, for accelerators (on a 2-core CPU a request takes minutes)
TINYLLAMA_1B_SHAPE: dict[str, Any] = {
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 22,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
}
SHAPES = {"llama135m": SMOLLM_135M_SHAPE, "llama1b": TINYLLAMA_1B_SHAPE}


def position_arguments(ap: argparse.ArgumentParser, positions: int) -> None:
    """The options the stdlib-position scripts share: how many positions, their seed, k, the
    token budget, torch's threads."""
    ap.add_argument("--positions", type=int, default=positions)
    ap.add_argument("--seed", type=int, default=20231116)
    ap.add_argument("-k", "--mutants", type=int, default=10)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)


def below_one(args: argparse.Namespace, *options: str) -> bool:
    """Whether one of ``options`` (e.g. ``--positions``) is below 1 or ``--threads`` below 0; if
    so, one sentence saying so is on stderr."""
    if min(getattr(args, o.lstrip("-").replace("-", "_")) for o in options) >= 1 and args.threads >= 0:
        return False
    named = ", ".join(options[:-1]) + f" and {options[-1]}" if len(options) > 1 else options[0]
    print(f"{named} must be at least 1, --threads at least 0.", file=sys.stderr)
    return True


def sampled(args: argparse.Namespace, **settings: Any) -> tuple[list[tuple[str, str, str]], Settings]:
    """The seeded stdlib positions of ``position_arguments``' options, and the settings they give
    (k, the token budget, threads; ``settings``: more)."""
    positions = stdlib_positions(args.positions, random.Random(args.seed))
    return positions, Settings(
        mutants=args.mutants, max_new_tokens=args.max_new_tokens, threads=args.threads, **settings
    )


@dataclass
class Sample:
    where: str
    variants: int
    plain: float  # wall seconds
    cctest: float
    plain_cpu: float  # CPU seconds of this process (all its threads)
    cctest_cpu: float
    completion: str = ""  # the repaired completion the request returned

    def ratio(self, clock: str) -> float:
        if clock == "cpu":
            return self.cctest_cpu / self.plain_cpu
        return self.cctest / self.plain


@contextmanager
def llama_135m() -> Iterator[Path]:
    """A directory holding a random-weight model of SmolLM-135M's shape and the bundled tokenizer."""
    with random_llama("llama135m") as path:
        yield path


@contextmanager
def random_llama(name: str) -> Iterator[Path]:
    """A directory holding a random-weight Llama-shaped model of shape ``SHAPES[name]`` and the
    bundled tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from cctest.models import bundled_model_path

    bundled = bundled_model_path()
    with tempfile.TemporaryDirectory(prefix=f"cctest-{name}-") as tmp:
        out = Path(tmp)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(bundled / f, out / f)
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(out, local_files_only=True)
        eos = tok.eos_token_id if tok.eos_token_id is not None else 0
        config = LlamaConfig(vocab_size=len(tok), bos_token_id=eos, eos_token_id=eos, **SHAPES[name])

        def build() -> None:
            torch.manual_seed(0)
            LlamaForCausalLM(config).save_pretrained(out)

        # on the models' thread: torch run on this one too would slow every model call after it
        run_on_model_thread(build)
        yield out


@contextmanager
def model_dir(name: str) -> Iterator[Path | None]:
    if name == "bundled":
        yield None
    elif name in SHAPES:
        with random_llama(name) as path:
            yield path
    else:
        yield Path(name)


def model_backends(
    models: str, max_new_tokens: int, threads: int, **options: Any
) -> Iterator[tuple[str, HFBackend]]:
    """Per comma-separated name of ``models`` (``model_dir``), a backend writing ``max_new_tokens``
    with boundary stops off (``options``: more ``HFBackend`` arguments); a random-weight model's
    directory lives until the next name is taken."""
    arguments: dict[str, Any] = {"boundaries": False, **options}
    opts = GenerationOptions(max_new_tokens=max_new_tokens)
    for name in [m.strip() for m in models.split(",") if m.strip()]:
        with model_dir(name) as path:
            yield name, HFBackend(path, options=opts, threads=threads, **arguments)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear between the closest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    at = (len(ordered) - 1) * q / 100
    lo = int(at)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (at - lo)


def timed_plain(backend: HFBackend, text: str, suffix: str) -> tuple[float, float]:
    """Wall and CPU seconds of one plain ``generate`` (filled in before ``suffix`` where the model
    has a FIM template, as the request's rows are)."""
    t, cpu = time.perf_counter(), time.process_time()
    backend.generate([text], suffixes=[suffix])
    return time.perf_counter() - t, time.process_time() - cpu


def timed_cctest(engine: Engine, prompt: Prompt) -> tuple[float, float, int, str]:
    """Wall and CPU seconds of one engine request, how many variants it completed, and the
    repaired completion."""
    t, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(engine.run(prompt))
    return time.perf_counter() - t, time.process_time() - cpu, 1 + len(result.mutants), result.completion


Setup = tuple[int, float]  # (decide_after, prefill_budget)


def label_of(setup: Setup, decide: Sequence[int], budgets: Sequence[float]) -> str:
    """How a request's setup is named where several are measured side by side."""
    parts = []
    if len(decide) > 1:
        parts.append(f"decide_after {setup[0]:>2}")
    if len(budgets) > 1:
        parts.append(f"budget {setup[1]:g}")
    return ", ".join(parts)


def measure(
    backend: HFBackend,
    settings: Settings,
    positions: Sequence[tuple[str, str, str]],
    decide: Sequence[int] | None = None,
    budgets: Sequence[float] | None = None,
) -> dict[Setup, list[Sample]]:
    """Per pair of a ``decide_after`` value (``decide``) and a ``prefill_budget`` value
    (``budgets``; default: the settings' own), one sample per position: the plain completion and
    that request, measured next to each other."""
    ds = list(decide) if decide else [settings.decide_after]
    bs = list(budgets) if budgets else [settings.prefill_budget]
    values = [(d, b) for d in ds for b in bs]
    engines = {v: Engine(backend, settings.replace(decide_after=v[0], prefill_budget=v[1])) for v in values}
    engine_prompt = Prompt(text="def f(x):\n    return x\n")
    for engine in engines.values():
        asyncio.run(engine.run(engine_prompt))  # warm-up: first-call costs out of the figures
    samples: dict[Setup, list[Sample]] = {v: [] for v in values}
    for i, (where, before, after) in enumerate(positions):
        prompt = Prompt(text=before, suffix=after)
        # alternate the order, so no side always runs on a warmer cache
        order: list[Setup | None] = [None, *values]
        if i % 2:
            order.reverse()
        got: dict[Setup, tuple[float, float, int, str]] = {}
        for d in order:
            if d is None:
                p, p_cpu = timed_plain(backend, before, after)
            else:
                got[d] = timed_cctest(engines[d], prompt)
        line = f"  {where:<26}"
        for d in values:
            c, c_cpu, n, text = got[d]
            s = Sample(where, n, p, c, p_cpu, c_cpu, text)
            samples[d].append(s)
            label = f"  {label_of(d, ds, bs)}:" if len(values) > 1 else ""
            line += (
                f"{label} {n:2d} variants  wall {p * 1000:6.0f} / {c * 1000:6.0f} ms"
                f" {s.ratio('wall'):5.2f}x  CPU {p_cpu * 1000:6.0f} / {c_cpu * 1000:6.0f} ms"
                f" {s.ratio('cpu'):5.2f}x"
            )
        print(line)
    return samples


def report(samples: Sequence[Sample], variants: int) -> dict[str, float]:
    def line(label: str, got: Sequence[Sample]) -> None:
        if not got:
            print(f"  {label:<34} no positions")
            return
        figures = []
        for clock in ("wall", "cpu"):
            r = [s.ratio(clock) for s in got]
            figures.append(f"{clock:>4}: median {statistics.median(r):5.2f}x p90 {percentile(r, 90):5.2f}x")
        print(f"  {label:<34} {len(got):3d} positions  " + "   ".join(figures))

    full = [s for s in samples if s.variants >= variants]
    line(f"all {variants - 1} mutants ({variants} variants)", full)
    line("every position", samples)
    by_n: dict[int, list[Sample]] = defaultdict(list)
    for s in samples:
        by_n[s.variants].append(s)
    for n in sorted(by_n):
        line(f"  {n} variants", by_n[n])
    ratios = [s.ratio("wall") for s in full]
    return {"median": statistics.median(ratios), "p90": percentile(ratios, 90)} if ratios else {}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=20, help="cursor positions per model (default 20)")
    ap.add_argument("--models", default="bundled,llama135m", help="bundled, llama135m or model directories")
    ap.add_argument("--seed", type=int, default=20231116)
    ap.add_argument("--seeds", default="", help="several seeds, comma-separated (in place of --seed)")
    ap.add_argument("-k", "--mutants", type=int, default=10)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument(
        "--threads", type=int, default=0, help="torch CPU threads (default 0, the setting's: the idle cores)"
    )
    ap.add_argument("--no-suffix", action="store_true", help="left to right: no code after the cursor")
    ap.add_argument("--device", default="auto", help="the setting device: auto, cpu, cuda or mps")
    ap.add_argument(
        "--mutant-pool",
        type=int,
        default=Settings().mutant_pool,
        help="candidates drawn per kept mutant (the setting mutant_pool; 1: the schemes' own order)",
    )
    ap.add_argument(
        "--spare-suffix",
        action=argparse.BooleanOptionalAction,
        default=Settings().spare_suffix,
        help="renames spare the code after the cursor of a suffix-first model (the setting spare_suffix)",
    )
    ap.add_argument(
        "--near-sites",
        action=argparse.BooleanOptionalAction,
        default=Settings().near_sites,
        help="mutants changed near the cursor (the setting near_sites)",
    )
    ap.add_argument(
        "--decide-after",
        default=str(Settings().decide_after),
        help="the setting decide_after; several comma-separated values are measured side by side "
        f"(default {Settings().decide_after}; 0: every row finished before choosing)",
    )
    ap.add_argument(
        "--prefill-budget",
        default=f"{Settings().prefill_budget:g}",
        help="the setting prefill_budget; several comma-separated values are measured side by side "
        f"(default {Settings().prefill_budget:g}; 0: no bound)",
    )
    ap.add_argument(
        "--busy", type=int, default=0, help="processes spinning on the CPU beside the run (default 0)"
    )
    args = ap.parse_args(argv)
    try:
        decide = [int(v) for v in args.decide_after.split(",") if v.strip()]
        budgets = [float(v) for v in args.prefill_budget.split(",") if v.strip()]
        seeds = [int(v) for v in args.seeds.split(",") if v.strip()] or [args.seed]
    except ValueError:
        decide, budgets, seeds = [], [], [args.seed]
    if (
        min(args.positions, args.mutants, args.max_new_tokens, args.mutant_pool) < 1
        or args.threads < 0
        or not decide
        or min(decide) < 0
        or not budgets
        or min(budgets) < 0
    ):
        print(
            "--positions, -k, --max-new-tokens and --mutant-pool must be at least 1, --threads at "
            "least 0, --decide-after a comma-separated list of token counts (0 or more), "
            "--prefill-budget one of numbers (0 or more) and --seeds one of integers.",
            file=sys.stderr,
        )
        return 2
    import torch

    positions: list[tuple[str, str, str]] = []
    by_seed: list[tuple[int, int, int]] = []  # (seed, first position, end)
    for seed in seeds:
        args.seed = seed
        got, settings = sampled(
            args, mutant_pool=args.mutant_pool, spare_suffix=args.spare_suffix, near_sites=args.near_sites
        )
        by_seed.append((seed, len(positions), len(positions) + len(got)))
        positions += [(w, b, "" if args.no_suffix else a) for w, b, a in got]
    print(
        f"{args.positions} stdlib positions per seed (seed {', '.join(map(str, seeds))}); "
        f"{'left to right' if args.no_suffix else 'with the code after the cursor'}; k = {args.mutants}, "
        f"mutant pool {args.mutant_pool}, spare_suffix {'on' if args.spare_suffix else 'off'}, "
        f"near_sites {'on' if args.near_sites else 'off'}, "
        f"decide_after {','.join(map(str, decide))}, prefill_budget {','.join(f'{b:g}' for b in budgets)}; "
        f"{args.max_new_tokens} new tokens, boundary stops off; torch {torch.__version__}; "
        f"beside {args.busy} busy processes"
    )
    with busy(args.busy):
        return _run(args, settings, positions, by_seed, decide, budgets)


def _run(
    args: argparse.Namespace,
    settings: Settings,
    positions: list[tuple[str, str, str]],
    by_seed: list[tuple[int, int, int]],
    decide: list[int],
    budgets: list[float],
) -> int:
    import torch

    # every call prefills its prompt afresh: kept from the call before, the plain side would reuse
    # the request's prefix (or the other way round) at the same position; typing, where reuse
    # applies, is benchmarks/keystroke_reuse.py's figure
    for name, backend in model_backends(
        args.models, args.max_new_tokens, args.threads, device=args.device, reuse_prefix=False
    ):
        print(f"\n{name}: {backend.describe()}, {torch.get_num_threads()} thread(s)")
        by_value = measure(backend, settings, positions, decide, budgets)
        for v, samples in by_value.items():
            label = f"decide_after {v[0]}" + (f", prefill_budget {v[1]:g}" if len(budgets) > 1 else "")
            print(f"ratio cctest / plain ({name}, {label}):")
            report(samples, args.mutants + 1)
            if len(by_seed) > 1:
                for seed, lo, hi in by_seed:
                    print(f"  seed {seed}:")
                    report(samples[lo:hi], args.mutants + 1)
        b0 = budgets[0]
        if 0 in decide and len(decide) > 1:  # what deciding early changed in the answer
            whole = by_value[0, b0]
            for (d, budget), samples in by_value.items():
                if d and budget == b0:
                    same = sum(a.completion == b.completion for a, b in zip(whole, samples, strict=True))
                    n = len(samples)
                    print(f"  decide_after {d}: the same repaired completion as 0 at {same}/{n} positions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
