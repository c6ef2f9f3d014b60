"""Realistic prompts for the backend tests: a module prefix, then a function being written, and
near-copies of it as CCTest's mutants would make (renamed identifiers, a reordered argument list,
an added comment), so the rows share a long token prefix but not everything."""

from __future__ import annotations

MODULE = '''"""Utilities for walking a source tree."""

import os
import sys


def is_python_file(name):
    return name.endswith(".py") and not name.startswith(".")


def count_lines(path):
    with open(path) as handle:
        return sum(1 for _ in handle)


'''


def _function(param: str = "directory", acc: str = "result", item: str = "name", comment: str = "") -> str:
    return (
        f"def list_python_files({param}):\n{comment}    {acc} = []\n"
        f"    for {item} in os.listdir({param}):\n        "
    )


ORIGINAL = MODULE + _function()

VARIANTS = [
    ORIGINAL,
    MODULE + _function(param="folder"),
    MODULE + _function(acc="found"),
    MODULE + _function(item="entry"),
    MODULE + _function(comment="    # the .py files only\n"),
    MODULE + _function(param="d", acc="out", item="n"),
]

OTHERS = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return ",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n",
    "def read_lines(path):\n    with open(path) as f:\n",
    "import os\n\n",
]

# rows that own very different numbers of tokens once they part from the first: a change at the
# cursor (one token or so), one in the middle, one at the top (every token), another prompt
PARTING = [
    ORIGINAL,
    ORIGINAL[:-4] + "   # x\n        ",
    ORIGINAL.replace("def count_lines(path):", "def count_lines(where):").replace("(path)", "(where)"),
    ORIGINAL.replace("walking a source tree", "walking through a source tree"),
    "import json\n\n\ndef load(path):\n    ",
]
