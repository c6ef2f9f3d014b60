"""``_sites.node_offsets``: the wanted nodes' whitespace-inclusive spans as character offsets."""

from __future__ import annotations

import libcst as cst

from cctest.mutators._sites import node_offsets

SOURCE = (
    "# header\r\n"
    "def größe(a, b):\r\n"
    "    # a comment owned by the next statement\r\n"
    "    total = a + b  # trailing\r\n"
    '    text = """two\r\nlines"""\r\n'
    "    return (total)\r\n"
    "\r\n"
    "x = größe(1, 2)\r\n"
)


class _Collect(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: list[cst.Name] = []
        self.lines: list[cst.SimpleStatementLine] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.lines.append(node)


def _module() -> tuple[cst.Module, _Collect]:
    module = cst.parse_module(SOURCE)
    found = _Collect()
    module.visit(found)
    return module, found


def test_spans_slice_the_source_to_each_nodes_text() -> None:
    module, found = _module()
    wanted = {id(n) for n in found.names} | {id(s) for s in found.lines}
    code, offsets = node_offsets(module, wanted)
    assert code == SOURCE and set(offsets) == wanted
    for name in found.names:  # a name's span is its code, parentheses included (non-ASCII too)
        start, end = offsets[id(name)]
        assert SOURCE[start:end] == module.code_for_node(name)
    assert [SOURCE[slice(*offsets[id(n)])] for n in found.names if n.value == "total"] == ["total", "(total)"]
    spans = [SOURCE[slice(*offsets[id(s)])] for s in found.lines]
    # a statement's span holds its leading comment lines, its indentation and its line break
    assert spans[0] == "    # a comment owned by the next statement\r\n    total = a + b  # trailing\r\n"
    assert spans[1] == '    text = """two\r\nlines"""\r\n'  # a line break inside a string counts
    assert spans[3] == "\r\nx = größe(1, 2)\r\n"


def test_the_source_given_is_the_code_generated() -> None:
    module, found = _module()
    wanted = {id(n) for n in found.names}
    assert node_offsets(module, wanted, SOURCE) == node_offsets(module, wanted)


def test_only_an_empty_batched_visit_is_skipped() -> None:
    from cctest.mutators._sites import _PositionsOnly

    class CountNames(cst.BatchableCSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.seen = 0

        def visit_Name(self, node: cst.Name) -> None:
            self.seen += 1

    module, found = _module()
    counter = CountNames()
    _PositionsOnly(module, unsafe_skip_copy=True).visit_batched([counter])
    assert counter.seen == len(found.names)  # a visit with a visitor in it still runs
