"""The golden record of what the engine answers on the bundled model: completions and verdicts.

A refactor of the model backend or of the engine's use of it must not change a single completion
or verdict. This script runs ``Engine`` on the bundled model (greedy, a fresh load, one torch
thread) at cursor positions drawn with two fixed seeds in the behaviour corpus
(``tests/data/corpus``), with the code after the cursor, in the engine's modes:

* ``plain``: no mutants, the prompt alone (filled in the middle: the bundled model has a FIM
  template);
* ``repair``: four mutants, every completion whole (``decide_after`` 0), filled in the middle;
* ``decide``: four mutants deciding after 4 tokens (``run_settling``), then the verdict settled
  on the whole completions;
* ``left_to_right``: four mutants, no code after the cursor;

and then every position of a seed in one ``run_many`` (one backend call, ``groups``). It records
the number of mutants, every completion, the outliers, counts and threshold, the chosen row and
the chosen completion.

    .venv/bin/python tests/data/engine/make_golden.py          # rewrite golden.json
    .venv/bin/python tests/data/engine/make_golden.py --check  # compare, exit 1 on a difference

``tests/unit/test_engine_golden.py`` runs the comparison. Regenerate only for an intended change
of the completions or verdicts, and say so in the commit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from pathlib import Path
from typing import Any

from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend
from cctest.cache import clear_caches
from cctest.config import Settings
from cctest.engine import Engine
from cctest.types import EngineResult, Prompt

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"
GOLDEN = HERE / "golden.json"
SEEDS = (0, 7)  # position seed s draws the positions and is the engine's (mutants') seed
POSITIONS = 8  # per seed
MAX_NEW_TOKENS = 24
MUTANTS = 4
DECIDE_AFTER = 4


def _positions(seed: int) -> list[tuple[Path, int]]:
    rng = random.Random(31_000 + seed)
    files = sorted(CORPUS.glob("*.py"))
    out = []
    for _ in range(POSITIONS):
        path = rng.choice(files)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        line = rng.randrange(len(lines))
        col = rng.randrange(len(lines[line].rstrip("\n")) + 1)
        out.append((path, sum(len(x) for x in lines[:line]) + col))
    return out


def _result(result: EngineResult | Exception) -> dict[str, Any]:
    if isinstance(result, Exception):
        return {"error": f"{type(result).__name__}: {result}"}
    v = result.verdict
    return {
        "mutants": [m.scheme for m in result.mutants],
        "completions": [
            {"source": c.source, "raw": c.raw, "text": c.text, "error": c.error, "cut": c.cut}
            for c in result.completions
        ],
        "outliers": list(v.outliers),
        "counts": list(v.counts),
        "threshold": round(v.threshold, 9),
        "no_results": list(v.no_results),
        "chosen": v.chosen,
        "completion": result.completion,
        "decided_after": result.decided_after,
        "settled": result.settled,
    }


def _settings(seed: int, **overrides: Any) -> Settings:
    return Settings(**{"seed": seed, "mutants": MUTANTS, "max_new_tokens": MAX_NEW_TOKENS, **overrides})


async def _record(backend: HFBackend) -> dict[str, Any]:
    cursors = []
    many = {}
    for seed in SEEDS:
        prompts = []
        for path, at in _positions(seed):
            text = path.read_text(encoding="utf-8")
            prompt = Prompt(text=text[:at], suffix=text[at:])
            prompts.append(prompt)
            clear_caches()
            entry: dict[str, Any] = {"file": path.name, "offset": at, "seed": seed}
            entry["plain"] = _result(await Engine(backend, _settings(seed, mutants=0)).run(prompt))
            entry["repair"] = _result(await Engine(backend, _settings(seed, decide_after=0)).run(prompt))
            deciding = Engine(backend, _settings(seed, decide_after=DECIDE_AFTER))
            early, settling = await deciding.run_settling(prompt)
            entry["decide"] = _result(early)
            settled = await settling.result() if settling is not None else None
            entry["decide_settled"] = None if settled is None else _result(settled)
            ltr = Prompt(text=prompt.text)
            entry["left_to_right"] = _result(await Engine(backend, _settings(seed, decide_after=0)).run(ltr))
            cursors.append(entry)
        clear_caches()
        results = await Engine(backend, _settings(seed, decide_after=0)).run_many(prompts)
        many[str(seed)] = [_result(r) for r in results]
    return {"cursors": cursors, "run_many": many}


def record() -> dict[str, Any]:
    """A fresh load of the bundled model (no prefix kept from other calls), and the record."""
    backend = HFBackend(None, options=GenerationOptions(max_new_tokens=MAX_NEW_TOKENS), threads=1)
    return asyncio.run(_record(backend))


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with golden.json instead of writing it")
    args = parser.parse_args(argv)
    text = dumps(record())
    if args.check:
        same = GOLDEN.read_text(encoding="utf-8") == text
        print("same as golden.json" if same else "differs from golden.json")
        return 0 if same else 1
    GOLDEN.write_text(text, encoding="utf-8")
    print(f"wrote {GOLDEN} ({len(text)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
