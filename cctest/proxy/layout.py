"""How a plugin's prompt carries the code after the cursor, and whether that code is Python.

A plugin sends the code after the cursor in one of three ways:

* the API's own ``suffix`` field (OpenAI ``/v1/completions``, Ollama ``/api/generate``);
* a prompt already laid out in a model family's fill-in-the-middle tokens (``raw`` prompts),
  recognised here with the templates of ``cctest.backends.fim`` (StarCoder, SantaCoder,
  CodeLlama, DeepSeek-Coder, Qwen2.5-Coder/CodeGemma; PSM and SPM), with any text before the
  first FIM token (``<filename>a.py``, a repository header) kept as the layout's ``head``;
* not at all: the prompt is the code before the cursor, completed left to right.

``Layout.render`` lays any row (a mutant and its renamed suffix) out again exactly as the plugin
laid out its own prompt, so the original row is byte for byte what the plugin sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..backends.fim import FAMILIES, FimTemplate
from ..context import find_window
from ..document import PYTHON_SUFFIXES

SUFFIX_FIELD = "suffix"
TEMPLATE = "template"
LEFT_TO_RIGHT = "none"


@dataclass(frozen=True)
class Layout:
    """How a request carries the code after the cursor (module docstring)."""

    kind: str  # SUFFIX_FIELD, TEMPLATE or LEFT_TO_RIGHT
    template: FimTemplate | None = None
    head: str = ""  # text before the template's first token, kept as it was

    def render(self, prefix: str, suffix: str) -> str:
        """The prompt text of a row: laid out in the template, else the code before the cursor.

        >>> Layout(TEMPLATE, FAMILIES["starcoder"], "<filename>a.py\\n").render("x = ", "\\ny = 1")
        '<filename>a.py\\n<fim_prefix>x = <fim_suffix>\\ny = 1<fim_middle>'
        """
        if self.template is None:
            return prefix
        return self.head + self.template.prompt(prefix, suffix)

    def describe(self) -> str:
        if self.template is not None:
            return self.template.describe()
        return "suffix field" if self.kind == SUFFIX_FIELD else "left to right"

    @property
    def reads_suffix_first(self) -> bool:
        return self.template is not None and self.template.order == "spm"


def _candidates() -> list[FimTemplate]:
    """Every named template, and CodeLlama's without the spaces around its tokens (some plugins
    send ``<PRE>{prefix}<SUF>{suffix}<MID>``)."""
    out = list(FAMILIES.values())
    out += [
        FimTemplate("codellama", "<PRE>{prefix}<SUF>{suffix}<MID>", FAMILIES["codellama"].stops),
        FimTemplate("codellama-spm", "<PRE><SUF>{suffix}<MID>{prefix}", FAMILIES["codellama"].stops),
    ]
    return out


def _pattern(template: FimTemplate) -> re.Pattern[str]:
    parts = re.split(r"(\{prefix\}|\{suffix\})", template.layout)
    regex = "(?P<head>.*?)"
    for part in parts:
        if part == "{prefix}":
            regex += "(?P<prefix>.*)"
        elif part == "{suffix}":
            regex += "(?P<suffix>.*)"
        else:
            regex += re.escape(part)
    return re.compile(regex + r"\Z", re.DOTALL)


_PATTERNS = [(t, _pattern(t)) for t in _candidates()]
# the tokens that open a template: a prompt without any of them is not laid out (cheap first test)
_OPENERS = tuple({t.layout[: t.layout.index("{")].split(" ")[0][:6] for t in _candidates()})


def recognise(prompt: str) -> tuple[Layout, str, str] | None:
    """The template ``prompt`` is laid out in, and the code before and after the cursor in it;
    None when it is laid out in none of them.

    >>> layout, before, after = recognise("<fim_prefix>def f(x):\\n    return <fim_suffix>\\n<fim_middle>")
    >>> layout.describe(), before, after
    ('starcoder (psm)', 'def f(x):\\n    return ', '\\n')
    >>> recognise("<｜fim▁begin｜>a = <｜fim▁hole｜>\\nb<｜fim▁end｜>")[0].describe()
    'deepseek (psm)'
    >>> recognise("<|fim_prefix|><|fim_suffix|>\\nb<|fim_middle|>a = ")[1:]
    ('a = ', '\\nb')
    >>> recognise("def f(x):\\n    return ") is None
    True
    """
    if not any(o in prompt for o in _OPENERS):
        return None
    for template, pattern in _PATTERNS:
        m = pattern.match(prompt)
        if m is not None:
            return Layout(TEMPLATE, template, m["head"]), m["prefix"], m["suffix"]
    return None


# a file name a plugin writes above the code (StarCoder's <filename>, Qwen's <|file_sep|>, a
# "Path:" comment as Continue and others write it)
_FILE_NAME = re.compile(r"(?:<filename>|<\|file_sep\|>|<file_sep>|\bPath:)[ \t]*([^\s<>]+)")


def looks_like_python(head: str, prefix: str) -> bool:
    """Whether the code before the cursor is Python cctest can mutate: the file it names (if it
    names one) is a Python file, and the code near the cursor reads as Python
    (``cctest.context.find_window``, tolerant of half-typed code).

    >>> looks_like_python("", "def f(x):\\n    return ")
    True
    >>> looks_like_python("", "function f(x) {\\n  return ")
    False
    >>> looks_like_python("<filename>src/app.ts\\n", "x = 1\\n")
    False
    """
    names = _FILE_NAME.findall(head + prefix[:2000])
    if names:
        suffix = PurePosixPath(names[-1]).suffix.lower()
        if suffix and suffix not in PYTHON_SUFFIXES:
            return False
    return find_window(prefix) is not None


__all__ = ["LEFT_TO_RIGHT", "SUFFIX_FIELD", "TEMPLATE", "Layout", "looks_like_python", "recognise"]
