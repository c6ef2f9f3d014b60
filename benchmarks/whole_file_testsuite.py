"""Check the schemes against a real test suite: CPython's own tests of a standard-library module.

For each scheme, ``mutate_whole`` rewrites the module at every site where the scheme applies, the
mutated module is put first on ``sys.path`` in a fresh interpreter, and CPython's unit tests for
the module are run against it. A behaviour-preserving scheme keeps every test green; INI's one
allowed difference, the extra output, shows up only in tests that compare printed text.

Usage: .venv/bin/python benchmarks/whole_file_testsuite.py [--module argparse] [--scheme NAME]...
(needs CPython's ``test`` package, which most installations ship)
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
from pathlib import Path

from cctest.mutators import SCHEMES, mutate_whole

RUNNER = """
import sys
sys.path.insert(0, sys.argv[1])  # before unittest, which imports argparse itself
import unittest
import {module} as target
assert target.__file__.startswith(sys.argv[1]), target.__file__
import test.test_{module} as tests
result = unittest.main(module=tests, exit=False, verbosity=0, argv=["x"]).result
print("RESULT", result.testsRun, len(result.failures), len(result.errors), len(result.skipped))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", default="argparse", help="a stdlib module with a test.test_<module> suite")
    ap.add_argument("--scheme", action="append", default=[], help="restrict to a scheme (repeatable)")
    args = ap.parse_args()
    source_path = Path(importlib.import_module(args.module).__file__ or "")
    source = source_path.read_text()
    print(
        f"{source_path} ({len(source.splitlines())} lines): CPython's test.test_{args.module} on each mutant"
    )
    print(f"{'scheme':8}{'sites':>7}{'distance':>10}{'tests':>8}{'failures':>10}{'errors':>8}")
    print("(sites: names renamed, dead variables or prints inserted, or lines rewritten)")
    for name in args.scheme or list(SCHEMES):
        m = mutate_whole(source, name)
        if m.text == source:
            print(f"{name:8}  (applies nowhere)")
            continue
        old, new = source.splitlines(), m.text.splitlines()
        # renamed names, dead variables, inserted lines, or rewritten lines
        sites = (
            len(m.renames)
            or len(m.introduced)
            or (len(new) - len(old))
            or sum(a != b for a, b in zip(old, new, strict=True))
        )
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / f"{args.module}.py").write_text(m.text)
            p = subprocess.run(
                [sys.executable, "-c", RUNNER.format(module=args.module), tmp],
                capture_output=True,
                text=True,
                timeout=1800,
            )
        result = [line for line in p.stdout.splitlines() if line.startswith("RESULT")]
        if not result:
            print(f"{name:8} the test run failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        run, failures, errors, _ = (int(x) for x in result[-1].split()[1:])
        print(f"{name:8}{sites:7}{m.structural_distance:10.4f}{run:8}{failures:10}{errors:8}")


if __name__ == "__main__":
    main()
