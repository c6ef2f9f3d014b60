"""What REP (parameters) and REL (local variables) share: the names' occurrences and the rename.

``RenameSites`` (a site visitor of the batched pass) notes, per function, every ``Name`` in its
body that is a variable, and its parameters' names: what a rename by splicing changes (LOOP reads
them too). ``RenameTransformer`` is the same rename as a libcst transform (whole files).

It renames, inside the body of a chosen function, every ``Name`` that refers to the renamed
variable, including in nested functions, lambdas, comprehensions and f-string fields, which
``_analysis`` guarantees only read it. It never renames attribute names (``obj.b``), keyword
names at call sites (``f(b=1)``), imported module paths, or keyword patterns (``Point(x=0)``),
and it leaves the function's defaults, annotations and decorators alone: they are evaluated in
the enclosing scope, where the old name may mean something else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import libcst as cst

from ._analysis import FunctionFacts, NamePool, context_prefix
from ._sites import PrunedTransformer, code_at
from ._walk import SiteVisitor, Walk
from .base import Analysis, Applied, Scheme, Variant


class RenameSites(SiteVisitor):
    """Per function, the ``Name`` nodes of its variables in its body and of its parameters."""

    def __init__(self, walk: Walk) -> None:
        super().__init__(walk)
        # per function index: variable name -> the Name nodes that refer to it in the function's
        # body, and the Name of its parameter, each with the indentation in force there
        self.names: dict[int, dict[str, list[tuple[cst.Name, tuple[str, ...]]]]] = {}
        self.functions: list[tuple[int, tuple[int, ...]]] = []  # (id, path) per function
        # ids of Name nodes that ast keeps as plain strings (except-as, global/nonlocal, match
        # captures): pycode-similar does not abstract those away, so renaming them can change its score
        self.kept_by_pycode: set[int] = set()
        self.skip: set[int] = set()  # Name nodes that are not variables (attributes, keywords, ...)
        self.bodies: list[int] = []  # indices of the functions whose body the pass is in
        self.imports = 0  # inside an import, names are module paths

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        w = self.walk
        index = w.func_index_of[id(node)]
        self.functions.append((id(node), tuple(w.stack)))
        self.skip.add(id(node.name))
        p = node.params
        own = self.names.setdefault(index, {})
        for param in (*p.posonly_params, *p.params, *p.kwonly_params, p.star_arg, p.star_kwarg):
            if isinstance(param, cst.Param):
                own.setdefault(param.name.value, []).append((param.name, w.indents))
                self.wanted.add(id(param.name))

    def visit_FunctionDef_body(self, node: cst.FunctionDef) -> None:
        self.bodies.append(self.walk.func_index_of[id(node)])

    def leave_FunctionDef_body(self, node: cst.FunctionDef) -> None:
        self.bodies.pop()

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self.skip and self.bodies and not self.imports:
            for fi in self.bodies:
                self.names.setdefault(fi, {}).setdefault(node.value, []).append((node, self.walk.indents))
            self.wanted.add(id(node))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_MatchKeywordElement(self, node: cst.MatchKeywordElement) -> None:
        self.skip.add(id(node.key))

    def visit_Param(self, node: cst.Param) -> None:
        self.skip.add(id(node.name))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.skip.add(id(node.name))

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.kept_by_pycode.add(id(node.name.name))

    def visit_ExceptStarHandler(self, node: cst.ExceptStarHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.kept_by_pycode.add(id(node.name.name))

    def visit_NameItem(self, node: cst.NameItem) -> None:
        self.kept_by_pycode.add(id(node.name))

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self.kept_by_pycode.add(id(node.name))

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self.kept_by_pycode.add(id(node.name))

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self.kept_by_pycode.add(id(node.rest))

    def _enter_import(self, node: cst.CSTNode) -> None:
        self.imports += 1

    def _leave_import(self, node: cst.CSTNode) -> None:
        self.imports -= 1

    visit_ImportAlias = visit_ImportFrom = _enter_import  # type: ignore[assignment]
    leave_ImportAlias = leave_ImportFrom = _leave_import  # type: ignore[assignment]


class RenameTransformer(PrunedTransformer):
    def __init__(self, plan: Mapping[int, Mapping[str, str]], paths: list[tuple[int, ...]]) -> None:
        # visit only the paths down to the functions, and the functions' subtrees whole
        super().__init__(paths, full=set(plan))
        self.plan = plan  # id(FunctionDef) -> {old: new}
        self.active: list[Mapping[str, str]] = []
        self.params: dict[int, Mapping[str, str]] = {}  # id(Param) -> mapping of its function

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        mapping = self.plan.get(id(node))
        if mapping:
            p = node.params
            for param in (*p.posonly_params, *p.params, *p.kwonly_params):
                self.params[id(param)] = mapping
            for star in (p.star_arg, p.star_kwarg):
                if isinstance(star, cst.Param):
                    self.params[id(star)] = mapping
        return True

    def visit_FunctionDef_body(self, node: cst.FunctionDef) -> None:
        self.active.append(self.plan.get(id(node), {}))

    def leave_FunctionDef_body(self, node: cst.FunctionDef) -> None:
        self.active.pop()

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        for mapping in self.active:
            new = mapping.get(updated.value)
            if new is not None:
                return updated.with_changes(value=new)
        return updated

    def leave_Param(self, original: cst.Param, updated: cst.Param) -> cst.Param:
        mapping = self.params.get(id(original))
        if mapping is not None and original.name.value in mapping:
            return updated.with_changes(name=original.name.with_changes(value=mapping[original.name.value]))
        return updated.with_changes(name=original.name)

    # names that are not variables: put the original back
    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword) if original.keyword is not None else updated

    def leave_ImportAlias(self, original: cst.ImportAlias, updated: cst.ImportAlias) -> cst.ImportAlias:
        return original

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        return original

    def leave_MatchKeywordElement(
        self, original: cst.MatchKeywordElement, updated: cst.MatchKeywordElement
    ) -> cst.MatchKeywordElement:
        return updated.with_changes(key=original.key)


def _first_occurrence(a: Analysis, index: int, name: str) -> int:
    """Where a rename of ``name`` in function ``index`` first changes the analysed source."""
    assert a.offsets is not None
    occurrences = a.found(RenameSites).names.get(index, {}).get(name, [])
    spans = [a.offsets[id(n)][0] for n, _ in occurrences if id(n) in a.offsets]
    return min(spans, default=-1)


class RenameScheme(Scheme):
    """REP_R/REP_C (parameters) and REL_R/REL_C (local variables)."""

    visitors = (RenameSites,)

    def __init__(self, name: str, what: str, style: str, summary: str) -> None:
        self.name = name
        self.what = what  # "param" | "local"
        self.style = style  # "R" (generic names) | "C" (names from the context)
        self.summary = summary

    def _candidates(self, f: FunctionFacts) -> list[str]:
        return f.rename_params if self.what == "param" else f.rename_locals

    def variants(self, a: Analysis) -> list[Variant]:
        order = sorted(a.functions, key=lambda f: (f.index != a.open_func, -f.index))
        out = []
        for f in order:
            names = self._candidates(f)
            # nearest the cursor first: the last-introduced names of the open function
            singles = list(reversed(names))
            if a.near and a.offsets is not None:
                # the name whose first occurrence is nearest the cursor first (the mutant's row
                # parts from the prompt's there)
                singles.sort(key=lambda n: -_first_occurrence(a, f.index, n))
            for n in singles:
                out.append(Variant(self.name, (f.index, (n,))))
            if len(names) > 1:
                out.append(Variant(self.name, (f.index, tuple(names))))
        return out

    def whole(self, a: Analysis) -> list[Variant]:
        return [
            Variant(self.name, (f.index, tuple(self._candidates(f))))
            for f in a.functions
            if self._candidates(f)
        ]

    def renamed(self, v: Variant) -> frozenset[str]:
        return frozenset(v.key[1])

    def sites(self, v: Variant) -> frozenset[Any]:
        index, names = v.key
        return frozenset((index, n) for n in names)  # renaming all names overlaps each single one

    def _new_name(self, f: FunctionFacts, old: str, pool: NamePool) -> str:
        if self.style == "R":
            base = "Param" if self.what == "param" else "LocalVar"
            n = 1
            while True:
                cand = f"{base}{n}"
                got = pool.fresh(cand)
                if got == cand:
                    return got
                pool.taken.discard(got)
                n += 1
        if self.what == "param":
            return pool.fresh(f"{context_prefix(f.name)}_Param_{old}")
        return pool.fresh(f"{f.name.strip('_') or 'func'}_{old}")

    def apply(
        self, a: Analysis, variants: Sequence[Variant], pool: NamePool, full: bool = False
    ) -> Applied | None:
        plan: dict[int, dict[str, str]] = {}
        for v in variants:
            index, names = v.key
            f = a.functions[index]
            for old in names:
                plan.setdefault(index, {})[old] = self._new_name(f, old, pool)
        if not plan:
            return None
        same = False
        found = a.found(RenameSites)
        if a.offsets is not None and not full:
            edits: list[tuple[cst.CSTNode | int, str]] = []
            for i, mapping in plan.items():
                occurrences = found.names.get(i, {})
                for old, new in mapping.items():
                    edits += [
                        (n, code_at(a.module, n.with_changes(value=new), ind))
                        for n, ind in occurrences.get(old, [])
                    ]
            code = a.splice(edits)
            same = not any(id(n) in found.kept_by_pycode for n, _ in edits)
        else:
            by_node = {found.functions[i][0]: m for i, m in plan.items()}
            code = a.module.visit(RenameTransformer(by_node, [found.functions[i][1] for i in plan])).code
        renames = {new: old for m in plan.values() for old, new in m.items()}
        tail: dict[str, str] = {}
        if a.open_func >= 0:
            own = a.functions[a.open_func].comprehension_locals
            tail = {old: new for old, new in plan.get(a.open_func, {}).items() if old not in own}
        return Applied(code=code, renames=renames, tail_renames=tail, same_structure=same)
