"""Inserting statements into blocks, shared by GRA (dead code) and INI (a print)."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from ._sites import PrunedTransformer, code_at
from ._walk import Site
from .base import Analysis


class InsertTransformer(PrunedTransformer):
    """Inserts statements before given positions of given blocks (the module's body included)."""

    def __init__(self, inserts: Sequence[tuple[Site, cst.BaseStatement]], full: bool = False) -> None:
        super().__init__([s.path for s, _ in inserts], full)
        self.inserts: dict[int, list[tuple[int, cst.BaseStatement]]] = {}
        for site, stmt in inserts:
            self.inserts.setdefault(site.node, []).append((site.pos, stmt))

    @staticmethod
    def _insert(
        body: Sequence[cst.BaseStatement], items: Sequence[tuple[int, cst.BaseStatement]]
    ) -> list[cst.BaseStatement]:
        out = list(body)
        for pos, stmt in sorted(items, key=lambda x: x[0], reverse=True):
            # the blank lines and comments above the next statement stay with it
            if 0 <= pos <= len(out):
                out.insert(pos, stmt)
        return out

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        items = self.inserts.get(id(original))
        return updated.with_changes(body=self._insert(updated.body, items)) if items else updated

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        items = self.inserts.get(id(original))
        return updated.with_changes(body=self._insert(updated.body, items)) if items else updated


def insert_by_splice(a: Analysis, inserts: Sequence[tuple[Site, cst.BaseStatement]]) -> str:
    """The same result as InsertTransformer, by inserting libcst's code for each new statement at
    the text offset of the statement it goes before (or after the block's last statement)."""
    edits: list[tuple[cst.CSTNode | int, str]] = []
    assert a.offsets is not None
    for site, stmt in inserts:
        body = site.obj.body
        if site.pos < len(body):
            at = a.offsets[id(body[site.pos])][0]
        else:
            at = a.offsets[id(body[-1])][1]
        edits.append((at, code_at(a.module, stmt, site.indents)))
    return a.splice(edits)
