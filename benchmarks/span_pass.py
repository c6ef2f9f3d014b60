"""The mutators' span pass (``_sites.node_offsets``) through libcst's public API, beside the
private-API version it replaced, on the windows real cursor positions give.

Cursors at random lines inside function bodies of the standard library's argparse.py; for each,
the window the engine would mutate (``context.find_window``) is parsed and its sites collected as
``mutators.analyse`` does; then every version computes the same offsets (asserted identical),
timed in a rotating order in one run so that they share the machine's load. A second figure times the whole
of argparse.py (every site of the file wanted), the pass's worst case.

Three versions: the old one drives libcst's private ``CodegenState`` (``libcst._nodes.internal``)
and the first public one (commit 240cc01: a plain ``MetadataWrapper`` and the code generated
twice) are copied here for comparison only (cctest itself imports nothing private); the third is
``_sites.node_offsets`` as ``mutators.analyse`` calls it.

Usage: .venv/bin/python benchmarks/span_pass.py [--positions 40] [--rounds 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import libcst as cst
from libcst._nodes.internal import CodegenState  # the old, private way: for comparison only
from libcst.metadata import MetadataWrapper, WhitespaceInclusivePositionProvider

from cctest.context import find_window
from cctest.mutators import analyse
from cctest.mutators._analysis import shadowed_builtins
from cctest.mutators._sites import node_offsets

Offsets = tuple[str, dict[int, tuple[int, int]]]


class _OffsetState(CodegenState):
    """The replaced implementation: libcst's code generation noting the wanted nodes' token spans."""

    def __init__(self, module: cst.Module, wanted: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.wanted = wanted
        self.spans: dict[int, list[int]] = {}

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.spans[id(node)] = [len(self.tokens), 0]

    def after_codegen(self, node: cst.CSTNode) -> None:
        span = self.spans.get(id(node))
        if span is not None:
            span[1] = len(self.tokens)


def old_node_offsets(module: cst.Module, wanted: set[int]) -> Offsets:
    state = _OffsetState(module, wanted)
    module._codegen(state)
    starts = [0]
    total = 0
    for t in state.tokens:
        total += len(t)
        starts.append(total)
    code = "".join(state.tokens)
    return code, {i: (starts[a], starts[b]) for i, (a, b) in state.spans.items()}


def body_lines(source: str) -> list[int]:
    """1-based lines inside function bodies that hold code."""
    out: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            out.update(range(node.body[0].lineno, (node.end_lineno or node.body[0].lineno) + 1))
    lines = source.splitlines()
    return sorted(x for x in out if lines[x - 1].strip())


Case = tuple[cst.Module, set[int], str]


def prepared(source: str) -> Case:
    """The parsed window, its wanted nodes and its text, as ``mutators.analyse`` has them."""
    shadowed = shadowed_builtins(source)
    a = analyse(source, shadowed, splice=False)
    return a.module, a.wanted, source


def private_codegen(case: Case) -> Offsets:
    """The old version: libcst's private CodegenState, one code generation."""
    return old_node_offsets(case[0], case[1])


_NEWLINE = re.compile(r"\r\n?|\n")


def public_240cc01(case: Case) -> Offsets:
    """The first public version (commit 240cc01): a plain MetadataWrapper, whose ``resolve`` also
    visits every node for no batchable provider, and the code generated a second time."""
    module, wanted, _ = case
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(WhitespaceInclusivePositionProvider)
    code = module.code
    line_starts = [0, 0, *(m.end() for m in _NEWLINE.finditer(code))]
    offsets: dict[int, tuple[int, int]] = {}
    for node, r in ranges.items():
        if id(node) in wanted:
            offsets[id(node)] = (
                line_starts[r.start.line] + r.start.column,
                line_starts[r.end.line] + r.end.column,
            )
    return code, offsets


def public_now(case: Case) -> Offsets:
    """The public version as ``mutators.analyse`` calls it now: the source is the code."""
    return node_offsets(case[0], case[1], case[2])


VERSIONS: list[Callable[[Case], Offsets]] = [private_codegen, public_240cc01, public_now]


def compare(cases: list[Case], rounds: int) -> dict[str, list[float]]:
    """Milliseconds per version, each case timed with every version in a rotating order."""
    ms: dict[str, list[float]] = {fn.__name__: [] for fn in VERSIONS}
    for r in range(rounds):
        for i, case in enumerate(cases):
            shift = (i + r) % len(VERSIONS)
            results = []
            for fn in VERSIONS[shift:] + VERSIONS[:shift]:
                t = time.perf_counter()
                results.append(fn(case))
                ms[fn.__name__].append((time.perf_counter() - t) * 1000)
            assert all(x == results[0] for x in results), "the versions' offsets differ"
    return ms


def report(label: str, ms: dict[str, list[float]]) -> None:
    base = statistics.median(ms["private_codegen"])
    print(f"{label} (median ms, and the ratio to the private version):")
    for name, xs in ms.items():
        m = statistics.median(xs)
        print(f"  {name:20s} {m:9.2f} ms  {m / base:5.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=40, help="random cursor positions")
    ap.add_argument("--rounds", type=int, default=3, help="timings of each case per version")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    import argparse as target

    source = Path(target.__file__).read_text()
    lines = source.split("\n")
    rng = random.Random(args.seed)
    cases = []
    for ln in rng.sample(body_lines(source), args.positions):
        line = lines[ln - 1]
        window = find_window("\n".join(lines[: ln - 1]) + "\n" + line[: rng.randrange(len(line) + 1)])
        if window is not None:
            cases.append(prepared(window.source))
    sizes = [len(src.splitlines()) for _, _, src in cases]
    wanted = [len(w) for _, w, _ in cases]
    print(
        f"{len(cases)} windows of argparse.py, median {statistics.median(sizes):.0f} lines, "
        f"median {statistics.median(wanted):.0f} wanted nodes; offsets asserted identical"
    )
    report("cold window", compare(cases, args.rounds))
    whole = prepared(source)
    print(f"whole file: {len(lines)} lines, {len(whole[1])} wanted nodes")
    report("whole file", compare([whole], args.rounds))


if __name__ == "__main__":
    main()
