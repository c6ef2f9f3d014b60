"""The golden record of what the mutators make: every mutant at fixed cursor positions.

A refactor of ``cctest/mutators`` must not change a single mutant. This script records, for
cursor positions drawn with two fixed seeds in the behaviour corpus (``tests/data/corpus``), what
the public API returns: ``generate_mutants`` (default schemes with the code after the cursor as
``context``; every scheme with it as ``spare``, and ``near`` off at every other position; a
keystroke later, served from the per-window cache), ``nearest_the_cursor`` on those mutants, and
``mutate_whole`` of every scheme on every corpus file. A mutant's text is stored as the one span
where it differs from the prompt (start, end and new text), so the record stays small and its
diffs readable; a whole-file mutant as its length and SHA-256.

    .venv/bin/python tests/data/mutators/make_golden.py          # rewrite golden.json
    .venv/bin/python tests/data/mutators/make_golden.py --check  # compare, exit 1 on a difference

``tests/unit/mutators/test_golden.py`` runs the comparison. Regenerate only for an intended
change of the mutants, and say so in the commit.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

from cctest.cache import clear_caches
from cctest.mutators import SCHEMES, generate_mutants, mutate_whole, nearest_the_cursor
from cctest.types import Mutant

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"
GOLDEN = HERE / "golden.json"
SEEDS = (0, 7)  # position seed s draws the positions and is generate_mutants's seed
POSITIONS = 14  # per seed
# and a cursor 60% down each of these (where IRR and CMP have sites), with the first seed
ANCHORS = ("strings.py", "introspection.py", "numeric.py", "control.py")
# mutate_whole of every scheme on these (a whole file is slow to mutate on a busy machine)
WHOLE = ("sample.py", "strings.py", "formulas.py", "positional.py", "introspection.py", "signatures.py")


def _files() -> list[Path]:
    return sorted([*CORPUS.glob("*.py"), HERE / "sample.py"])


def _edit(prompt: str, text: str) -> list[Any]:
    """The one span of ``prompt`` that ``text`` replaces: [start, end, new text]."""
    n = min(len(prompt), len(text))
    start = next((i for i in range(n) if prompt[i] != text[i]), n)
    end = 0
    while end < n - start and prompt[len(prompt) - 1 - end] == text[len(text) - 1 - end]:
        end += 1
    return [start, len(prompt) - end, text[start : len(text) - end]]


def _mutant(prompt: str, m: Mutant) -> dict[str, Any]:
    return {
        "scheme": m.scheme,
        "edit": _edit(prompt, m.text),
        "renames": dict(sorted(m.renames.items())),
        "introduced": sorted(m.introduced),
        "distance": round(m.structural_distance, 12),
    }


def _call(prompt: str, **kwargs: Any) -> dict[str, Any]:
    out = generate_mutants(prompt, **kwargs)
    return {
        "mutants": [_mutant(prompt, m) for m in out.mutants],
        "dropped": [_mutant(prompt, m) for m in out.dropped],
    }


def _positions(seed: int) -> list[tuple[Path, int]]:
    rng = random.Random(20230514 + seed)
    files = _files()
    out = []
    for _ in range(POSITIONS):
        path = rng.choice(files)
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        line = rng.randrange(len(lines))
        col = rng.randrange(len(lines[line].rstrip("\n")) + 1)
        out.append((path, sum(len(x) for x in lines[:line]) + col))
    if seed == SEEDS[0]:
        for name in ANCHORS:
            lines = (CORPUS / name).read_text(encoding="utf-8").splitlines(keepends=True)
            out.append((CORPUS / name, sum(len(x) for x in lines[: len(lines) * 3 // 5])))
    return out


def record() -> dict[str, Any]:
    every = list(SCHEMES)
    cursors = []
    for seed in SEEDS:
        for i, (path, at) in enumerate(_positions(seed)):
            text = path.read_text(encoding="utf-8")
            prompt, after = text[:at], text[at:]
            clear_caches()
            default = _call(prompt, k=10, seed=seed, context=after)
            # one keystroke later: the same window, served from the cache with a longer tail
            typed = prompt + after[:1]
            keystroke = _call(typed, k=10, seed=seed, context=after[1:])
            clear_caches()
            near = i % 2 == 0
            spare = _call(prompt, schemes=every, k=6, seed=seed, context=after, spare=after, near=near)
            made = generate_mutants(prompt, k=10, seed=seed, context=after).mutants
            chosen = nearest_the_cursor(prompt, made, 4, spare=after if i % 2 else "")
            cursors.append(
                {
                    "file": path.name,
                    "offset": at,
                    "seed": seed,
                    "default": default,
                    "keystroke": keystroke,
                    "all_schemes_spare": {"near": near, **spare},
                    "nearest_4": [made.index(m) for m in chosen],
                }
            )
    whole: dict[str, dict[str, Any]] = {}
    for path in (p for p in _files() if p.name in WHOLE):
        source = path.read_text(encoding="utf-8")
        entry = {}
        for name in SCHEMES:
            m = mutate_whole(source, name)
            entry[name] = {
                "length": len(m.text),
                "sha256": hashlib.sha256(m.text.encode()).hexdigest(),
                "renames": dict(sorted(m.renames.items())),
                "introduced": sorted(m.introduced),
                "distance": round(m.structural_distance, 12),
            }
        whole[path.name] = entry
    return {"cursors": cursors, "whole": whole}


def dumps(data: dict[str, Any]) -> str:
    """One line per cursor and per file: small, and a difference shows which one moved."""
    line = functools.partial(json.dumps, sort_keys=True, ensure_ascii=True)
    cursors = ",\n".join(line(c) for c in data["cursors"])
    whole = ",\n".join(f"{line(k)}: {line(v)}" for k, v in sorted(data["whole"].items()))
    return f'{{"cursors": [\n{cursors}\n],\n"whole": {{\n{whole}\n}}}}\n'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
