"""Inserting statements into blocks, shared by GRA (dead code) and INI (a print)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

from ._analysis import FunctionFacts
from ._sites import ScopedVisitor


class InsertTransformer(ScopedVisitor, cst.CSTTransformer):
    """Inserts statements before given positions of given blocks (-1: the module's body)."""

    def __init__(self, functions: list[FunctionFacts], inserts: Mapping[int, Sequence[tuple[int, cst.BaseStatement]]]) -> None:
        super().__init__(functions)
        self.inserts = inserts

    @staticmethod
    def _insert(body: Sequence[cst.BaseStatement], items: Sequence[tuple[int, cst.BaseStatement]]) -> list[cst.BaseStatement]:
        out = list(body)
        for pos, stmt in sorted(items, key=lambda x: x[0], reverse=True):
            # the blank lines and comments above the next statement stay with it
            if 0 <= pos <= len(out):
                out.insert(pos, stmt)
        return out

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        items = self.inserts.get(self.block_ids[id(original)])
        return updated.with_changes(body=self._insert(updated.body, items)) if items else updated

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        items = self.inserts.get(-1)
        return updated.with_changes(body=self._insert(updated.body, items)) if items else updated
