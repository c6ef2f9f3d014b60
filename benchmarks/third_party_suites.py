"""Check the schemes against third-party libraries' own test suites (run before a scheme goes on).

Pure-Python libraries are downloaded as source distributions from PyPI (``pip download
--no-binary :all:``, once, into ``--workdir``) with their own tests. For each library its suite is
run once as the baseline; then, for each scheme, the library's biggest modules (by number of
functions; data tables do not count) are rewritten with ``mutate_whole`` at every site, with the
library's other modules and its tests as ``context`` (what a user passes: the code that calls the
module), and the suite is run again. A behaviour-preserving scheme fails exactly the tests the
baseline fails. INI's extra output and DOC's docstring edits are the differences those schemes are
allowed (docs/mutant-safety.md); a test that reads them shows up here as a failure.

Usage: .venv/bin/python benchmarks/third_party_suites.py [--library NAME]... [--scheme NAME]...
       [--modules 1] [--workdir DIR] [--timeout 300]

Each suite runs with pytest in a fresh interpreter with the library's source tree first on
``sys.path``; the libraries are those of docs/mutant-safety.md (more-itertools, six, inflection,
tabulate, idna). Results are printed as a table: the tests run, the failures beyond the baseline's
and those the baseline had that the mutant does not.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cctest.errors import InputError
from cctest.mutators import SCHEMES, mutate_whole

# name on PyPI, import root (a package directory or a module file), test paths (relative)
LIBRARIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "more-itertools": ("more_itertools", "more_itertools", ("tests",)),
    "six": ("six", "six.py", ("test_six.py",)),
    "inflection": ("inflection", "inflection", ("test_inflection.py",)),
    "tabulate": ("tabulate", "tabulate", ("test",)),
    "idna": ("idna", "idna", ("tests",)),
}
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)
_COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")


@dataclass
class Run:
    tests: int
    failing: frozenset[str]
    note: str = ""


def fetch(name: str, workdir: Path) -> Path:
    """The unpacked source distribution of ``name`` (downloaded once)."""
    workdir.mkdir(parents=True, exist_ok=True)
    norm = name.replace("-", "_").lower()
    archives = [
        p for p in workdir.glob("*.tar.gz") if p.name.replace("-", "_").lower().startswith(norm + "_")
    ]
    if not archives:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                name,
                "-d",
                workdir,
            ],
            check=True,
            timeout=300,
        )
        archives = [
            p for p in workdir.glob("*.tar.gz") if p.name.replace("-", "_").lower().startswith(norm + "_")
        ]
    archive = sorted(archives)[-1]
    root = workdir / archive.name[: -len(".tar.gz")]
    if not root.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(workdir, filter="data")
    return root


def run_suite(tree: Path, tests: Sequence[str], timeout: int) -> Run:
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *tests]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    try:
        done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return Run(0, frozenset(), "timed out")
    tail = done.stdout[-3000:]
    counts = {kind: int(n) for n, kind in _COUNTS.findall(tail.splitlines()[-1] if tail else "")}
    tests_run = sum(counts.get(k, 0) for k in ("passed", "failed", "xfailed", "xpassed"))
    return Run(tests_run, frozenset(_FAILED.findall(done.stdout)), "" if tests_run else tail[-300:])


def functions_in(path: Path) -> int:
    try:
        return sum(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            for n in ast.walk(ast.parse(path.read_text()))
        )
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--library", action="append", default=[], help="restrict to a library (repeatable)")
    ap.add_argument("--scheme", action="append", default=[], help="restrict to a scheme (repeatable)")
    ap.add_argument("--modules", type=int, default=1, help="how many of the biggest modules (default 1)")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "cctest-third-party")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per suite run")
    args = ap.parse_args(argv)
    unknown = [x for x in args.library if x not in LIBRARIES] + [x for x in args.scheme if x not in SCHEMES]
    if unknown:
        print(f"unknown library or scheme '{unknown[0]}'.", file=sys.stderr)
        return 2
    schemes = args.scheme or list(SCHEMES)
    print(f"Python {sys.version.split()[0]}")
    print(f"{'library':16} {'module':28} {'scheme':6} {'tests':>6} {'new fail':>8} {'fixed':>6}  note")
    for name in args.library or LIBRARIES:
        _, root_rel, test_paths = LIBRARIES[name]
        src = fetch(name, args.workdir)
        root = src / root_rel
        modules = [root] if root.is_file() else [p for p in root.rglob("*.py") if "test" not in p.name]
        biggest = sorted(modules, key=functions_in, reverse=True)[: args.modules]
        tests = [str(t) for t in test_paths]
        base = run_suite(src, tests, args.timeout)
        print(
            f"{name:16} {'(baseline)':28} {'-':6} {base.tests:6d} {len(base.failing):8d} {'':>6}  {base.note}"
        )
        context_files = [p for p in src.rglob("*.py") if p not in biggest and "docs" not in p.parts]
        context = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in context_files)
        for scheme in schemes:
            with tempfile.TemporaryDirectory() as tmp:
                tree = Path(tmp) / src.name
                shutil.copytree(src, tree)
                sites = 0
                for module in biggest:
                    text = module.read_text(encoding="utf-8")
                    try:
                        m = mutate_whole(text, scheme, context=context)
                    except InputError as exc:
                        print(f"{name:16} {module.name:28} {scheme:6} skipped: {exc}")
                        continue
                    sites += m.text != text
                    (tree / module.relative_to(src)).write_text(m.text, encoding="utf-8")
                if not sites:
                    print(f"{name:16} {biggest[0].name:28} {scheme:6} {'':24}applies nowhere")
                    continue
                got = run_suite(tree, tests, args.timeout)
                new = got.failing - base.failing
                fixed = base.failing - got.failing
                shown = ", ".join(sorted(new)[:3])
                label = ",".join(m.name for m in biggest)
                counts = f"{got.tests:6d} {len(new):8d} {len(fixed):6d}"
                print(f"{name:16} {label[:28]:28} {scheme:6} {counts}  {shown}{got.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
