"""What the schemes need to know about a window before rewriting it: scopes, names, evident types.

Scope facts come from the compiler's own symbol tables (``symtable``) and ``ast``, both in C and
fast enough to run per keystroke, rather than from libcst's ScopeProvider (about 600 ms for
argparse.py). Every function of the analysed source gets a ``FunctionFacts``, indexed in source
order, which is also the order in which a libcst visitor meets the ``FunctionDef`` nodes, so the
libcst transformers find their facts by counting.

Safety rules decided here (see docs/mutators.md):

- a name is renamed only if it is bound in that function, is not ``global``/``nonlocal`` there, is
  not bound by ``import``/``def``/``class`` (renaming those would change a module or ``__name__``),
  is not shown by an f-string ``{name=}``, is not a mangled ``__name``, and every nested scope
  that mentions it only reads it (a nested scope that binds the same name would be ambiguous);
- a comprehension variable is renamed (everywhere in the function) only when no scope of the
  function but its comprehensions binds or reads that name on its own (``_comprehension_variables``);
- a function that can observe its own variable names (``locals``, ``vars``, ``eval``, ``exec``,
  ``dir``, frames) gets no renames at all;
- a parameter's name is part of its function's keyword interface, so REP (``rename_params``)
  renames an ordinary parameter (positional-only or positional-or-keyword; never keyword-only,
  never the first parameter of a function defined in a class body, ``self``/``cls``, nor of a
  function at the top of a window whose enclosing block is a class or unknown) only when the
  *document* (the prompt, or the whole file, plus an optional ``context`` text such as the code
  after the cursor or a test file: ``scan_document``) shows no sign that the name matters:

  * the name is never passed by keyword: no ``NAME=`` (not ``==``) right after ``(`` or ``,``
    anywhere in the document, other than in the function's own signature (its default). The scan
    is textual and conservative: another function's default or ``a, b = ...`` also counts;
  * the function is not called with ``**`` unpacking (``f(...**d)``) nor wrapped by
    ``functools.partial``/``partialmethod`` (for ``__init__``: the class's name), and no call
    through a non-name (``fs[0](**d)``) unpacks ``**`` anywhere;
  * the document never mentions ``inspect``, ``signature``, ``__signature__``, ``__code__``,
    ``getfullargspec``, ``__wrapped__``, ``locals`` or ``vars`` (introspection of parameters);
  * the function is not decorated (pytest fixtures and parametrize, click, FastAPI, dataclass-like
    frameworks read parameter names), its name does not start with ``test`` (pytest injects
    fixtures by parameter name), and it is not a dunder other than ``__init__`` (protocols such as
    ``__init_subclass__`` or ``__class_getitem__`` may be called by keyword by the interpreter;
    ``__init__`` is called through its class, whose keyword calls the scan sees);

  ``*args``, ``**kwargs`` and positional-only parameters with a default in a function with
  ``**kwargs`` are never named by a caller and are renamed regardless. What remains observable,
  inherent to the paper's REP scheme, is what the document cannot see: callers *outside* it that
  pass the argument by keyword, introspection from outside, a ``**`` call through a variable (a
  callback ``fn(**opts)``) whose keys come from data rather than from ``NAME=`` text, and the
  parameter's name in the TypeError of a wrong call ("missing 1 required positional argument: 'b'");
- a local is an *evident int* when every binding of it in the function is an int literal,
  ``len(...)``, ``range(...)`` loop variable, or int arithmetic of such values (a fixpoint), and
  no nested scope binds it; likewise an evident float, str or tuple (``evident_kind``). IRR
  rewrites only locals of such immutable types; INI prints only values that print safely.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
import symtable
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..cache import LRU

_BUILTINS = frozenset(dir(builtins))
# builtins whose meaning a scheme relies on; each is checked for rebinding in the document
WATCHED_BUILTINS = ("len", "print", "bool", "range")
_DYNAMIC_NAMES = frozenset({"locals", "vars", "eval", "exec", "dir", "globals", "breakpoint"})
_DYNAMIC_ATTRS = frozenset({"f_locals", "_getframe", "f_back", "currentframe", "f_code"})
INT_OPS = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.FloorDiv,
    ast.Mod,
    ast.LShift,
    ast.RShift,
    ast.BitAnd,
    ast.BitOr,
    ast.BitXor,
)
_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
_NOT_RENAMED = frozenset({"self", "cls"})


@dataclass
class FunctionFacts:
    index: int  # source order among the functions of the analysed source
    name: str
    lineno: int
    params: list[str]
    keywordless_params: list[str]  # REP candidates: *args, **kwargs, ordinary ones the document allows
    rename_params: list[str] = field(default_factory=list)
    rename_locals: list[str] = field(default_factory=list)
    int_locals: frozenset[str] = frozenset()
    # other locals of an evident immutable built-in type: name -> "float", "str" or "tuple"
    kinds: dict[str, str] = field(default_factory=dict)
    first_param: str | None = None  # a name certainly in scope in the body (for GRA's dead code)
    # rename_locals bound only by the function's comprehensions (their renames never reach the
    # unfinished tail, where the name is not theirs)
    comprehension_locals: frozenset[str] = frozenset()


_REMEMBERED = 16  # answers kept per cache: the windows a few open documents are typed in
_head_cache: LRU[str, frozenset[str]] = LRU(_REMEMBERED)


def shadowed_in_prompt(head: str, rest: str) -> frozenset[str]:
    """``shadowed_builtins(head + rest)``, remembering the answer for the (long, unchanging) head."""
    return _head_cache.get_or_compute(head, lambda: shadowed_builtins(head)) | shadowed_builtins(rest)


_BINDING_BEFORE = re.compile(r"(?:\b(?:def|class|import|as|for|global|nonlocal|lambda|del)|[,(*])[ \t]*$")
_BINDING_AFTER = re.compile(r"[ \t]*(?:=(?!=)|:=|,|\)|:|\bin\b)")
_CALLED = re.compile(r"[ \t]*\(")
_DEFINED_BEFORE = re.compile(r"\b(?:def|class)[ \t]+$")


def shadowed_builtins(doc: str) -> frozenset[str]:
    """The watched builtins that the document might rebind (conservative, from the text alone).

    An occurrence counts when it could be a binding or a use as a value: after ``def``, ``class``,
    ``import``, ``as``, ``for``, ``global``, ``nonlocal``, ``lambda``, ``del``, a comma, ``(`` or
    ``*``, or before ``=``, ``:=``, a comma, ``)``, ``:`` or ``in``. A name followed by ``(`` is a
    call wherever it stands (``f(len(x))``) and counts only after ``def`` or ``class``. Calls,
    attributes (``obj.print``) and words in prose ("to print the value") do not count.
    ``import *`` could rebind anything.
    """
    if "import *" in doc or "import*" in doc:
        return frozenset(WATCHED_BUILTINS)
    out = set()
    for name in WATCHED_BUILTINS:
        i = doc.find(name)
        while i >= 0:
            j = i + len(name)
            before = doc[i - 1] if i else " "
            after = doc[j] if j < len(doc) else " "
            if not (before.isalnum() or before == "_" or before == ".") and not (
                after.isalnum() or after == "_"
            ):
                line_start = doc.rfind("\n", 0, i) + 1
                line_end = doc.find("\n", j)
                end = line_end if line_end >= 0 else len(doc)
                if _CALLED.match(doc, j, end):
                    # a name followed by '(' is a call (f(len(x))), bound only by def/class
                    binding = _DEFINED_BEFORE.search(doc, line_start, i) is not None
                else:
                    binding = bool(
                        _BINDING_BEFORE.search(doc, line_start, i) or _BINDING_AFTER.match(doc, j, end)
                    )
                if binding:
                    out.add(name)
                    break
            i = doc.find(name, j)
    return frozenset(out)


# a keyword argument (or a default, or a tuple target): NAME= right after '(' or ',', not NAME==
_KEYWORD_USE = re.compile(r"[(,]\s*([^\W\d]\w*)\s*=(?!=)")
_STARSTAR = re.compile(r"[(,]\s*\*\*")
# starts with a literal, which re finds fast ('mypartial(f' counts too: conservative)
_PARTIAL = re.compile(r"partial(?:method)?\s*\(\s*(?:[\w.]*\.)?([^\W\d]\w*)")
_INTROSPECTION_WORDS = (
    "inspect",
    "signature",
    "__signature__",
    "__code__",
    "getfullargspec",
    "__wrapped__",
    "locals",
    "vars",
)
_DOC_READERS = ("__doc__", "doctest", "pydoc", "getdoc", "cleandoc")
_CALLEE = re.compile(r"(\bdef\s+)?([^\W\d]\w*)\s*$")
_OPEN, _CLOSE = "([{", ")]}"
_PHYSICAL_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_WALK_BACK = 4000  # how far back a '**' looks for the '(' of its call


@dataclass(frozen=True)
class KeywordFacts:
    """What a document shows about which parameter names matter (see the module docstring)."""

    keywords: tuple[tuple[str, int], ...] = ()  # name -> occurrences of 'NAME=' after '(' or ','
    unpacked: frozenset[str] = frozenset()  # functions called with '**' or wrapped by partial
    introspected: bool = False  # parameter names may be read (inspect, __code__, ** on a non-name)
    reads_docs: bool = False  # docstrings may be read (__doc__, doctest, pydoc, getdoc, cleandoc)

    def count(self, name: str) -> int:
        for n, c in self.keywords:
            if n == name:
                return c
        return 0

    def merge(self, other: KeywordFacts) -> KeywordFacts:
        counts = dict(self.keywords)
        for n, c in other.keywords:
            counts[n] = counts.get(n, 0) + c
        return KeywordFacts(
            tuple(sorted(counts.items())),
            self.unpacked | other.unpacked,
            self.introspected or other.introspected,
            self.reads_docs or other.reads_docs,
        )

    def restrict(self, text: str, extra: frozenset[str] = frozenset()) -> KeywordFacts:
        """Only the names that occur in ``text`` (a window): the part a window's analysis reads,
        and so the part a cache of analysed windows must be keyed on."""
        words = _words(text) | extra  # extra: names the window's analysis reads from outside it
        return KeywordFacts(
            tuple((n, c) for n, c in self.keywords if n in words),
            self.unpacked & words,
            self.introspected,
            self.reads_docs,
        )


def _mentions(text: str, start: int, words: Iterable[str]) -> bool:
    """Whether one of ``words`` occurs as a whole word in ``text[start:]`` (str.find is much faster
    than a regex alternation per keystroke)."""
    for w in words:
        i = text.find(w, start)
        while i >= 0:
            j = i + len(w)
            before = text[i - 1] if i else " "
            after = text[j] if j < len(text) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                return True
            i = text.find(w, j)
    return False


def _keyword_facts(text: str, start: int = 0) -> KeywordFacts:
    counts: dict[str, int] = {}
    for m in _KEYWORD_USE.finditer(text, start):
        counts[m[1]] = counts.get(m[1], 0) + 1
    unpacked = {m[1] for m in _PARTIAL.finditer(text, start)}
    introspected = _mentions(text, start, _INTROSPECTION_WORDS)
    for m in _STARSTAR.finditer(text, start):
        # walk back to the bracket this '**' is inside; a '(' after a name is a call of that name
        depth = 0
        i = m.start() if text[m.start()] == "," else m.start() + 1
        low = max(0, i - _WALK_BACK)
        callee = None
        while i > low:
            i -= 1
            ch = text[i]
            if ch in _CLOSE:
                depth += 1
            elif ch in _OPEN:
                if depth == 0:
                    callee = ch
                    break
                depth -= 1
        if callee is None:
            introspected = True  # cannot tell what is called: every name may matter
        elif callee == "(":
            line_start = text.rfind("\n", 0, i) + 1
            name = _CALLEE.search(text, line_start, i)
            if name is None:
                introspected = True  # f()(**d), fs[0](**d): an unknown function
            elif not name[1]:  # 'def f(**kwargs)' is a signature, not a call
                unpacked.add(name[2])
    reads_docs = _mentions(text, start, _DOC_READERS)
    return KeywordFacts(tuple(sorted(counts.items())), frozenset(unpacked), introspected, reads_docs)


_keyword_cache: LRU[str, KeywordFacts] = LRU(_REMEMBERED)
_words_cache: LRU[str, frozenset[str]] = LRU(_REMEMBERED)
_WORD = re.compile(r"[^\W\d]\w*")


def _words(text: str) -> frozenset[str]:
    """The identifier-like words of a window (remembered: a keystroke re-asks for the same one)."""
    return _words_cache.get_or_compute(text, lambda: frozenset(_WORD.findall(text)))


def _scan_remembered(text: str) -> KeywordFacts:
    return _keyword_cache.get_or_compute(text, lambda: _keyword_facts(text))


def scan_document(text: str, context: str = "", *, head: str = "") -> KeywordFacts:
    """The keyword facts of a document (and its ``context``), cheap enough per keystroke.

    ``head``: a prefix of ``text`` ending at a line start (the long, unchanging text above a
    window). It and the context are scanned once and remembered (pass the same string object on
    every call and its hash is not even recomputed); the rest is scanned per call, starting at the
    head's last '(' or ',' when only whitespace follows it, so that a keyword argument on the line
    after its call's '(' is seen.
    """
    facts = KeywordFacts()
    start = 0
    if head:
        facts = _scan_remembered(head)
        start = len(head)
        i = start - 1
        while i >= 0 and head[i] in " \t\r\n\f\\":
            i -= 1
        if i >= 0 and head[i] in "(,":
            start = i
    facts = facts.merge(_keyword_facts(text, start))
    if context:
        facts = facts.merge(_scan_remembered(context))
    return facts


_class_cache: LRU[tuple[str, str], str | None] = LRU(_REMEMBERED)
_HEADER = re.compile(r"(class|def|async[ \t]+def)[ \t]+([^\W\d]\w*)")


def enclosing_class(head: str, indent: str) -> str | None:
    """For a window that starts indented by ``indent``: the class whose body it is in, read from
    the nearest line above with less indentation. ``None`` when that is a ``def`` (a nested
    function, not a method) or there is none; ``"?"`` when it is something else (``if``, ``try``,
    a continuation line): it may be a class body, so functions there count as methods."""
    return _class_cache.get_or_compute((head, indent), lambda: _enclosing_class(head, indent))


def _enclosing_class(head: str, indent: str) -> str | None:
    out: str | None = None
    end = len(head)
    while end > 0:
        start = head.rfind("\n", 0, end - 1) + 1
        line = head[start:end].rstrip("\r\n")
        end = start
        stripped = line.lstrip(" \t")
        if not stripped or stripped.startswith("#") or len(line) - len(stripped) >= len(indent):
            continue
        m = _HEADER.match(stripped)
        out = "?" if m is None else (m[2] if m[1] == "class" else None)
        break
    return out


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text) if not text.isascii() else text


class NamePool:
    """Fresh identifiers: not in the document text at all, not a keyword or builtin, not used twice.

    Checking the raw text (not only the names in scope) is conservative and cheap: a name that occurs
    nowhere cannot collide with a global, a builtin, a closure variable or a class attribute.
    Python compares identifiers after NFKC normalisation, so the check is on normalised text.
    """

    def __init__(self, doc: str) -> None:
        self.doc = _normal(doc)
        self.taken: set[str] = set()

    def fork(self) -> NamePool:
        """A pool for another mutant: the same document, no names taken yet."""
        other = NamePool.__new__(NamePool)
        other.doc = self.doc
        other.taken = set()
        return other

    def fresh(self, base: str) -> str:
        base = base if base.isidentifier() else "Var"
        n = 1
        cand = base
        while cand in self.taken or keyword.iskeyword(cand) or cand in _BUILTINS or _normal(cand) in self.doc:
            n += 1
            cand = f"{base}{n}"
        self.taken.add(cand)
        return cand


def context_prefix(func_name: str) -> str:
    """``add`` -> ``Add``, ``_parse_args`` -> ``Parse_args``: the context part of a REP_C/REL_C/GRA_C name."""
    core = func_name.strip("_") or "Func"
    return core[:1].upper() + core[1:]


def _walk_own(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function body that belong to its own scope (nested scopes not entered)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, _SCOPES):
            # defaults, decorators and a comprehension's first iterable are evaluated here, but
            # they cannot bind names except through ':=', which is handled separately
            continue
        stack.extend(ast.iter_child_nodes(n))


def _names_in(target: ast.AST) -> Iterator[str]:
    for n in ast.walk(target):
        if isinstance(n, ast.Name):
            yield n.id


def _descendant_tables(t: symtable.SymbolTable) -> Iterator[symtable.SymbolTable]:
    for c in t.get_children():
        yield c
        yield from _descendant_tables(c)


def _only_read_below(t: symtable.SymbolTable, name: str) -> bool:
    for c in _descendant_tables(t):
        try:
            s = c.lookup(name)
        except KeyError:
            continue
        if not s.is_free() or s.is_assigned() or s.is_parameter() or s.is_global() or s.is_local():
            return False
    return True


_COMPREHENSIONS = frozenset({"listcomp", "setcomp", "dictcomp", "genexpr"})


def _comprehension_variables(table: symtable.SymbolTable, excluded: set[str]) -> list[str]:
    """The names bound only as comprehension variables inside the function: in no scope of the
    function but its comprehensions is the name bound or read on its own (the function's own
    scope, where a comprehension's first iterable is evaluated, never mentions it), so every
    occurrence in the function is one of those variables or a nested comprehension's read of one,
    and renaming all of them together is exact."""
    found: set[str] = set()
    for c in _descendant_tables(table):
        if c.get_name() in _COMPREHENSIONS:
            found.update(s.get_name() for s in c.get_symbols() if _comprehension_bound(c, s))
    own = {s.get_name() for s in table.get_symbols()}
    out = []
    for name in sorted(found - own - excluded):
        if name.startswith("__"):
            continue
        if all(_comprehension_use(c, name) for c in _descendant_tables(table)):
            out.append(name)
    return out


def _comprehension_bound(c: symtable.SymbolTable, s: symtable.Symbol) -> bool:
    return s.is_local() and s.is_assigned() and not s.is_parameter() and not s.is_global()


def _comprehension_use(c: symtable.SymbolTable, name: str) -> bool:
    """In scope ``c`` the name is absent, bound by ``c`` as a comprehension, or read from an
    enclosing comprehension (free: bound in an enclosing function-like scope, which is not the
    function itself)."""
    try:
        s = c.lookup(name)
    except KeyError:
        return True
    if c.get_name() in _COMPREHENSIONS and _comprehension_bound(c, s):
        return True
    return s.is_free() and not s.is_assigned() and not s.is_parameter()


def evident_int(node: ast.AST, ints: frozenset[str] | set[str], shadowed: frozenset[str]) -> bool:
    """Whether ``node`` certainly evaluates to an ``int`` (given that the names ``ints`` hold ints)."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return node.id in ints
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)) and evident_int(
            node.operand, ints, shadowed
        )
    if isinstance(node, ast.BinOp):
        return (
            isinstance(node.op, INT_OPS)
            and evident_int(node.left, ints, shadowed)
            and evident_int(node.right, ints, shadowed)
        )
    if isinstance(node, ast.Call):
        return (
            isinstance(node.func, ast.Name)
            and node.func.id == "len"
            and "len" not in shadowed
            and len(node.args) == 1
            and not node.keywords
            and not isinstance(node.args[0], ast.Starred)
        )
    return False


_NUMBER_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
# str methods that return an exact str (str's own methods: an instance cannot override them)
_STR_METHODS = frozenset({"join", "format", "strip", "lstrip", "rstrip", "lower", "upper", "replace"})


def evident_kind(
    node: ast.AST, ints: frozenset[str] | set[str], kinds: dict[str, str], shadowed: frozenset[str]
) -> str | None:
    """The built-in type ``node`` certainly evaluates to (when it does not raise): "int", "float",
    "str" or "tuple" (exact types, never a subclass), or None. ``kinds``: names known to hold the
    other types. Each rule is the type's own operator: ``float`` with ``int``/``float`` under
    ``+ - * / // %`` is a float (``int.__add__`` returns NotImplemented for a float, and
    ``float.__radd__`` answers), ``int / int`` is a float, ``str + str``, ``str * int``,
    ``tuple + tuple`` and ``tuple * int`` are a str or a tuple, a str's own methods return a str."""
    if evident_int(node, ints, shadowed):
        return "int"
    if isinstance(node, ast.Constant):
        return {float: "float", str: "str"}.get(type(node.value))
    if isinstance(node, ast.JoinedStr):
        return "str"
    if isinstance(node, ast.Tuple):
        return "tuple"
    if isinstance(node, ast.Name):
        return kinds.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return "float" if evident_kind(node.operand, ints, kinds, shadowed) == "float" else None
    if isinstance(node, ast.BinOp):
        left = evident_kind(node.left, ints, kinds, shadowed)
        right = evident_kind(node.right, ints, kinds, shadowed)
        pair = {left, right}
        if isinstance(node.op, _NUMBER_OPS) and pair <= {"int", "float"} and "float" in pair:
            return "float"
        if isinstance(node.op, ast.Div) and pair == {"int"}:
            return "float"
        if isinstance(node.op, ast.Add) and left == right and left in ("str", "tuple"):
            return left
        if isinstance(node.op, ast.Mult) and len(pair) == 2 and "int" in pair and pair & {"str", "tuple"}:
            return (pair - {"int"}).pop()
        return None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _STR_METHODS
        and evident_kind(node.func.value, ints, kinds, shadowed) == "str"
    ):
        return "str"
    return None


def _bindings(fn: ast.AST, shadowed: frozenset[str]) -> dict[str, list[ast.AST | None]]:
    """Every binding of every name in the function's own scope: the value bound (an AugAssign for
    ``x op= e``), or None for a binding of unknown type."""
    bindings: dict[str, list[ast.AST | None]] = {}  # None: a binding of unknown type

    def bind(name: str, value: ast.AST | None) -> None:
        bindings.setdefault(name, []).append(value)

    for n in ast.walk(fn):  # ':=' binds in the function even inside a comprehension
        if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
            bind(n.target.id, None)
    for n in _walk_own(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    bind(t.id, n.value)
                else:
                    for name in _names_in(t):
                        bind(name, None)
        elif isinstance(n, ast.AugAssign):
            if isinstance(n.target, ast.Name):
                bind(n.target.id, n if isinstance(n.op, INT_OPS) else None)
        elif isinstance(n, ast.AnnAssign):
            if isinstance(n.target, ast.Name) and n.value is not None:
                bind(n.target.id, n.value)
        elif isinstance(n, (ast.For, ast.AsyncFor)):
            it = n.iter
            is_range = (
                isinstance(n, ast.For)
                and isinstance(it, ast.Call)
                and isinstance(it.func, ast.Name)
                and it.func.id == "range"
                and "range" not in shadowed
            )
            if is_range and isinstance(n.target, ast.Name):
                bind(n.target.id, ast.Constant(0))
            else:
                for name in _names_in(n.target):
                    bind(name, None)
        elif isinstance(n, (ast.With, ast.AsyncWith)):
            for item in n.items:
                if item.optional_vars is not None:
                    for name in _names_in(item.optional_vars):
                        bind(name, None)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bind(n.name, None)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                bind((a.asname or a.name).split(".")[0], None)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(n.name, None)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            bind(n.name, None)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            bind(n.rest, None)
    return bindings


def _binding_value(b: ast.AST) -> ast.AST:
    """The value a binding gives: ``x op= e`` gives ``x op e``."""
    if isinstance(b, ast.AugAssign):
        return ast.BinOp(left=b.target, op=b.op, right=b.value)
    return b


def _local_kinds(
    bindings: dict[str, list[ast.AST | None]],
    candidates: set[str],
    ints: frozenset[str],
    shadowed: frozenset[str],
) -> dict[str, str]:
    """The candidates (not ints) every binding of which gives one float, str or tuple: a guess from
    the bindings whose kind is plain without any guess, then dropping names with a binding of
    another kind until none is left (a fixpoint, so the names hold their kinds at every point)."""
    kinds: dict[str, str] = {}
    for name in sorted(candidates - ints):
        values = bindings.get(name)
        if not values or None in values:
            continue
        guesses = {evident_kind(_binding_value(b), ints, {}, shadowed) for b in values if b is not None}
        guesses.discard(None)
        if len(guesses) == 1:
            kinds[name] = guesses.pop()  # type: ignore[assignment]
    changed = True
    while changed:
        changed = False
        for name in sorted(kinds):
            for b in bindings[name]:
                assert b is not None
                if evident_kind(_binding_value(b), ints, kinds, shadowed) != kinds[name]:
                    del kinds[name]
                    changed = True
                    break
    return kinds


def _int_locals(
    bindings: dict[str, list[ast.AST | None]], candidates: set[str], shadowed: frozenset[str]
) -> frozenset[str]:
    ints = {name for name in candidates if bindings.get(name) and None not in bindings[name]}
    changed = True
    while changed:
        changed = False
        for name in sorted(ints):
            for b in bindings[name]:
                value = b.value if isinstance(b, ast.AugAssign) else b
                if value is None or not evident_int(value, ints, shadowed):
                    ints.discard(name)
                    changed = True
                    break
    return frozenset(ints)


def _excluded_names(fn: ast.AST, source_lines: list[str]) -> set[str]:
    """Names bound by import/def/class in the function's own scope, and names an f-string shows."""
    out: set[str] = set()
    for n in _walk_own(fn):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
    for n in ast.walk(fn):
        # f"{x=}" prints the text 'x=': renaming x would change the output. ast keeps the text
        # as a constant ending in '=' right before the field.
        if isinstance(n, ast.JoinedStr):
            vals = n.values
            for before, field_ in zip(vals, vals[1:], strict=False):
                if (
                    isinstance(before, ast.Constant)
                    and isinstance(before.value, str)
                    and before.value.rstrip().endswith("=")
                ):
                    out.update(_names_in(field_))
    return out


def _is_dynamic(fn: ast.AST) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and n.id in _DYNAMIC_NAMES:
            return True
        if isinstance(n, ast.Attribute) and n.attr in _DYNAMIC_ATTRS:
            return True
    return False


def _functions_in_order(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    fns = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    fns.sort(key=lambda n: (n.lineno, n.col_offset))
    return fns


def _tables_by_line(top: symtable.SymbolTable) -> dict[tuple[int, str], symtable.SymbolTable]:
    out: dict[tuple[int, str], symtable.SymbolTable] = {}
    for t in _descendant_tables(top):
        if t.get_type() == "function":
            out.setdefault((t.get_lineno(), t.get_name()), t)
    return out


def _offset(line_starts: list[int], lines: list[str], lineno: int, col: int) -> int:
    """A text offset from ast's (1-based line, UTF-8 byte column)."""
    line = lines[lineno - 1] if lineno - 1 < len(lines) else ""
    return line_starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))


def _named_params(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    class_name: str | None,
    doc: KeywordFacts,
    signature: str,
) -> list[str]:
    """The ordinary parameters whose names the document shows no use of (module docstring)."""
    name = fn.name
    if doc.introspected or fn.decorator_list or name.startswith("test"):
        return []
    if name.startswith("__") and name.endswith("__") and name != "__init__":
        return []
    if name in doc.unpacked or (name == "__init__" and (class_name in doc.unpacked or class_name == "?")):
        return []  # (a class we cannot name may be called with **)
    a = fn.args
    ordinary = [p.arg for p in (*a.posonlyargs, *a.args)]
    if class_name is not None:
        ordinary = ordinary[1:]  # self / cls, whatever they are called
    own: dict[str, int] = {}
    for m in _KEYWORD_USE.finditer(signature):
        own[m[1]] = own.get(m[1], 0) + 1
    return [p for p in ordinary if doc.count(p) <= own.get(p, 0)]


def analyse_functions(
    source: str,
    shadowed: frozenset[str],
    doc: KeywordFacts | None = None,
    outer_class: str | None = None,
) -> list[FunctionFacts]:
    """Facts for every function of a parsable ``source``, in source order.

    ``doc``: the keyword facts of the document ``source`` comes from (``scan_document``); by
    default ``source`` itself is the whole document. ``outer_class``: for a window analysed under
    an ``if 1:`` wrapper, the class whose body it is in (``enclosing_class``): the functions at the
    window's top level are that class's methods.
    """
    if doc is None:
        doc = scan_document(source)
    tree = ast.parse(source)
    classes: dict[int, str] = {}  # id(FunctionDef) -> name of the class whose body defines it
    for n in ast.walk(tree):
        if isinstance(n, ast.ClassDef):
            for child in n.body:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    classes[id(child)] = n.name
    if outer_class is not None and tree.body and isinstance(tree.body[0], ast.If):
        for child in tree.body[0].body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                classes[id(child)] = outer_class
    try:
        tables = _tables_by_line(symtable.symtable(source, "<window>", "exec"))
    except SyntaxError:
        # e.g. a nested function's 'nonlocal x' whose enclosing function is outside the window:
        # without scopes nothing is renamed and no local counts as an evident int
        tables = {}
    lines = source.splitlines()
    # lines as the parser counts them (str.splitlines also splits at \f, \v, \x1c, ...)
    physical = _PHYSICAL_LINE.findall(source)
    line_starts = [0]
    for line in physical:
        line_starts.append(line_starts[-1] + len(line))
    out: list[FunctionFacts] = []
    for index, fn in enumerate(_functions_in_order(tree)):
        a = fn.args
        params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        params += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
        # a parameter's name is part of the behaviour wherever a caller can pass it by keyword or
        # an error message can show it: a required positional-only parameter is named by "missing
        # 1 required positional argument", and one passed by keyword by "positional-only
        # arguments passed as keyword arguments" unless **kwargs takes the keyword. *args and
        # **kwargs are never named.
        n_required = len(a.posonlyargs) + len(a.args) - len(a.defaults)
        hidden_posonly = [
            p.arg for i, p in enumerate(a.posonlyargs) if i >= n_required and a.kwarg is not None
        ]
        signature = source[
            _offset(line_starts, physical, fn.lineno, fn.col_offset) : _offset(
                line_starts, physical, fn.body[0].lineno, fn.body[0].col_offset
            )
        ]
        named = _named_params(fn, classes.get(id(fn)), doc, signature)
        starred = [x.arg for x in (a.vararg, a.kwarg) if x is not None]
        keywordless = [p for p in params if p in named or p in hidden_posonly or p in starred]
        first = next((p for p in params if p not in _NOT_RENAMED), None)
        facts = FunctionFacts(
            index=index,
            name=fn.name,
            lineno=fn.lineno,
            params=params,
            keywordless_params=keywordless,
            first_param=first,
        )
        out.append(facts)
        table = tables.get((fn.lineno, fn.name))
        if table is None:
            continue
        locals_: set[str] = set()
        for s in table.get_symbols():
            if (
                s.is_local()
                and s.is_assigned()
                and not s.is_parameter()
                and not s.is_global()
                and not s.is_nonlocal()
            ):
                locals_.add(s.get_name())
        # inside a class, symtable reports '__x' mangled ('_C__x'); such a name is not in the
        # source, so it is not a candidate (mangled names are never renamed)
        written = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        locals_ &= written
        candidates = {n for n in locals_ if _only_read_below(table, n)}
        bindings = _bindings(fn, shadowed)
        facts.int_locals = _int_locals(bindings, candidates, shadowed)
        facts.kinds = _local_kinds(bindings, candidates, facts.int_locals, shadowed)
        if _is_dynamic(fn):
            continue
        excluded = _excluded_names(fn, lines) | _NOT_RENAMED

        def ok(name: str, table: symtable.SymbolTable = table, excluded: set[str] = excluded) -> bool:
            return name not in excluded and not name.startswith("__") and _only_read_below(table, name)

        facts.rename_params = [p for p in keywordless if ok(p)]
        comprehension = _comprehension_variables(table, excluded)
        facts.comprehension_locals = frozenset(comprehension)
        facts.rename_locals = sorted(
            (*(n for n in locals_ if ok(n)), *comprehension), key=lambda n: source.find(n)
        )
    return out
