"""Answer parsing: the code in what a model returned, and the function the task asked for in it.

Models answer in many shapes; ``extract_code`` takes the code out of each:

* a continuation of the rendered stub (completion models): pass the ``prompt`` and the code is
  ``prompt + answer``;
* fenced blocks, with or without a language tag (```` ```python ````, ```` ``` ````), with prose
  before and after, several blocks (the one that defines the function wins; blocks in another
  language are passed over), an unterminated block (the model ran out of tokens);
* bare code: all of it when it parses, else with prose before it (the code starts at the first
  top-level ``def``, ``class``, ``import``, ``from`` or decorator) and after it (trailing
  top-level lines that are not Python are cut, last first, until the code parses).

``extract_function`` then parses the code with ``ast``, finds the required function among the
top-level definitions (helpers, imports and other functions may sit beside it), checks that it
can be called with the task's number of positional arguments, and drops top-level expression
statements (usage examples such as ``print(f(3))``), so running the code only defines things.
When it cannot, it names what is wrong with one of the first four categories of the oracle:
``no_function``, ``wrong_function_name``, ``wrong_arg_count`` or ``syntax_error``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .model import Task

_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = {"", "python", "py", "python3", "py3", "pycon", "ipython"}
_CODE_START = re.compile(r"^(?:async[ \t]+def|def|class|import|from|@)\b", re.MULTILINE)
_ANY_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(", re.MULTILINE)
# a line at column 0 that can end a Python chunk: not blank, not a comment, not a closing bracket
_TOP_LINE = re.compile(r"^[^\s#)\]}]", re.MULTILINE)


@dataclass(frozen=True)
class Extracted:
    """The program to judge, or why there is none.

    ``category`` is None when the function was found (``code`` is then the program: imports,
    helpers and the function), else one of ``no_function``, ``wrong_function_name``,
    ``wrong_arg_count``, ``syntax_error`` with ``detail`` saying what was found.
    """

    code: str | None
    category: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.category is None


def extract_code(answer: str, prompt: str | None = None) -> str:
    """The code in a model's answer (see the module docstring); ``prompt``: the stub it continues."""
    if prompt is not None:
        return prompt + answer
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(answer)]
    python = [body for tag, body in blocks if tag in _PYTHON_TAGS]
    if python:
        with_def = [b for b in python if _ANY_DEF.search(b)]
        return (with_def or python)[0]
    try:
        ast.parse(answer)
        return answer  # all of it is Python (module-level assignments before the function included)
    except (SyntaxError, ValueError):
        m = _CODE_START.search(answer)
        return answer[m.start() :] if m else answer


def _parse_trimmed(code: str) -> tuple[ast.Module | None, str, SyntaxError | None]:
    """Parse ``code``; if it fails, cut trailing top-level lines (prose after the code) until it parses."""
    try:
        return ast.parse(code), code, None
    except (SyntaxError, ValueError) as exc:
        first = exc if isinstance(exc, SyntaxError) else SyntaxError(str(exc))
    cuts = [m.start() for m in _TOP_LINE.finditer(code) if m.start() > 0]
    for cut in reversed(cuts):
        head = code[:cut]
        if not _ANY_DEF.search(head):
            break
        try:
            return ast.parse(head), head, None
        except (SyntaxError, ValueError):
            continue
    return None, code, first


def _accepts(fn: ast.FunctionDef | ast.AsyncFunctionDef, arity: int) -> bool:
    a = fn.args
    positional = len(a.posonlyargs) + len(a.args)
    required = positional - len(a.defaults)
    kw_required = sum(d is None for d in a.kw_defaults)
    return kw_required == 0 and required <= arity and (arity <= positional or a.vararg is not None)


def _describe(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    return f"{fn.name}({ast.unparse(fn.args)})"


def _strip_expressions(code: str, tree: ast.Module) -> str:
    """Drop top-level expression statements (usage examples) that sit on lines of their own."""
    lines = code.splitlines(keepends=True)
    body = tree.body
    drop: list[tuple[int, int]] = []
    for i, node in enumerate(body):
        if not isinstance(node, ast.Expr) or node.end_lineno is None:
            continue
        if i == 0 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a module docstring
        start, end = node.lineno, node.end_lineno
        shared = any(
            other is not node and other.lineno <= end and (other.end_lineno or other.lineno) >= start
            for other in body
        )
        if not shared:
            drop.append((start - 1, end))
    for start, end in reversed(drop):
        del lines[start:end]
    return "".join(lines)


def extract_function(task: Task, answer: str, prompt: str | None = None) -> Extracted:
    """The program that defines ``task.name`` in ``answer``, or the category of what is wrong."""
    if not answer.strip():
        return Extracted(None, "no_function", "the model returned nothing")
    code = extract_code(answer, prompt)
    tree, code, error = _parse_trimmed(code)
    if tree is None:
        if not _ANY_DEF.search(code):
            return Extracted(None, "no_function", "the answer holds no Python function")
        assert error is not None
        where = f" (line {error.lineno})" if error.lineno else ""
        return Extracted(code, "syntax_error", f"SyntaxError: {error.msg}{where}")
    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    wanted = [f for f in functions if f.name == task.name]
    if not wanted:
        nested = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not nested:
            return Extracted(code, "no_function", "the answer defines no function")
        if any(n.name == task.name for n in nested):
            detail = f"{task.name} is defined only inside a class or another function"
        else:
            detail = f"expected {task.name}, found {', '.join(dict.fromkeys(n.name for n in nested))}"
        return Extracted(code, "wrong_function_name", detail)
    fn = wanted[-1]  # a later definition replaces an earlier one, as when the code runs
    counts = task.rules.get("arg_counts")
    if counts is not None:  # the count of declared parameters, as inspect.signature counts them
        a = fn.args
        declared = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None)
        declared += a.kwarg is not None
        if declared not in counts:
            wanted_counts = " or ".join(str(n) for n in counts)
            return Extracted(
                code,
                "wrong_arg_count",
                f"{_describe(fn)} declares {declared} parameter{'' if declared == 1 else 's'}, "
                f"not {wanted_counts}",
            )
    elif task.arity is not None and not _accepts(fn, task.arity):
        return Extracted(
            code,
            "wrong_arg_count",
            f"{_describe(fn)} cannot be called with {task.arity} positional argument"
            + ("" if task.arity == 1 else "s"),
        )
    return Extracted(_strip_expressions(code, tree))
