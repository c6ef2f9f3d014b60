"""What settling the verdict on whole completions costs, as ratios, in one run.

    python benchmarks/settle_cost.py                        # 6 positions, the bundled model
    python benchmarks/settle_cost.py --models bundled,llama135m --positions 6

In repair mode the language server answers with the completion chosen on every row's first
``decide_after`` tokens, then runs the rows that decision cut on to their ends and records the
verdict on the whole completions (``Engine.run_settling``). That work runs on the model's one
thread between requests and gives it up to any request queued behind it (after the decoding step
under way). At seeded random cursor positions inside stdlib function bodies
(``mutant_supply.stdlib_positions``), k = 10, boundary stops off, every call cold:

* plain: one ``generate`` of the prompt (the yardstick, as in ``repair_latency.py``);
* answer: the repair-mode request (``run_settling``), what the editor waits for;
* settle: from the answer to the settled verdict, with nothing else asked meanwhile;
* next alone / next while settling: a request for the next keystroke's prompt (the first
  character of the answer typed), on its own, and sent at once after an answer whose settling
  then runs (the worst case: ``debounce_ms`` 0). Their ratio is what a pending settling costs the
  request the user waits for.

Printed per position, then the median and p90 of answer / plain, settle / plain and next while
settling / next alone. Wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repair_latency import below_one, model_backends, percentile, position_arguments, sampled  # noqa: E402

from cctest.backends.hf import HFBackend  # noqa: E402
from cctest.config import Settings  # noqa: E402
from cctest.engine import Engine  # noqa: E402
from cctest.types import Prompt  # noqa: E402


async def one_position(
    backend: HFBackend, engine: Engine, before: str, after: str
) -> dict[str, float] | None:
    """The five timings at one position (seconds); None when nothing was cut (no settling)."""
    prompt = Prompt(text=before, suffix=after)
    t = time.perf_counter()
    await asyncio.to_thread(backend.generate, [before], suffixes=[after])
    plain = time.perf_counter() - t

    t = time.perf_counter()
    answered, settling = await engine.run_settling(prompt)
    answer = time.perf_counter() - t
    if settling is None:
        return None
    t = time.perf_counter()
    await settling.result()
    settle = time.perf_counter() - t

    typed = answered.completion[:1] or " "
    following = Prompt(text=before + typed, suffix=after)
    t = time.perf_counter()
    await engine.run(following)
    alone = time.perf_counter() - t

    _, settling = await engine.run_settling(prompt)
    pending = asyncio.ensure_future(settling.result()) if settling is not None else None
    await asyncio.sleep(0)  # the settling's first step is under way
    t = time.perf_counter()
    await engine.run(following)
    during = time.perf_counter() - t
    if pending is not None:
        await pending
    return {"plain": plain, "answer": answer, "settle": settle, "alone": alone, "during": during}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    position_arguments(ap, 6)
    ap.add_argument("--models", default="bundled", help="bundled, llama135m, llama1b or model directories")
    ap.add_argument("--decide-after", type=int, default=Settings().decide_after)
    args = ap.parse_args(argv)
    if below_one(args, "--positions", "--max-new-tokens", "--decide-after"):
        return 2
    positions, settings = sampled(args, decide_after=args.decide_after)
    for name, backend in model_backends(args.models, args.max_new_tokens, args.threads, reuse_prefix=False):
        engine = Engine(backend, settings)
        asyncio.run(engine.run(Prompt(text="def f(x):\n    return x\n")))  # warm-up
        print(
            f"\n{name}: {backend.describe()}, {args.threads} thread(s), k={args.mutants}, "
            f"decide_after {args.decide_after}, {args.max_new_tokens} tokens"
        )
        got = []
        for where, before, after in positions:
            t = asyncio.run(one_position(backend, engine, before, after))
            if t is None:
                print(f"  {where:<26} nothing cut: the answer's verdict is whole")
                continue
            got.append(t)
            print(
                f"  {where:<26} plain {t['plain'] * 1000:6.0f}  answer {t['answer'] * 1000:6.0f}"
                f"  settle {t['settle'] * 1000:6.0f}  next alone {t['alone'] * 1000:6.0f}"
                f"  while settling {t['during'] * 1000:6.0f} ms"
            )
        if not got:
            continue
        for label, num, den in (
            ("answer / plain", "answer", "plain"),
            ("settle / plain", "settle", "plain"),
            ("next while settling / next alone", "during", "alone"),
        ):
            ratios = [t[num] / t[den] for t in got]
            print(
                f"{label} ({name}): median {statistics.median(ratios):.2f}x "
                f"p90 {percentile(ratios, 90):.2f}x over {len(ratios)} positions"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
