"""Answer parsing on the shapes real models produce: fenced, prose around code, several functions,
helpers and imports, stub continuations, and the three ways an answer can miss the function."""

from __future__ import annotations

import pytest

from cctest.tasks import Task, completion_prompt, extract_function

ADD = Task("add", "Return the sum of a and b.", "add", args=("a", "b"), tests=("assert add(1, 2) == 3",))
MEAN = Task("mean", "Return the mean of xs.", "mean", arity=1, tests=("assert mean([2]) == 2",))


def _run(code: str, name: str, *args: object) -> object:
    ns: dict[str, object] = {}
    exec(code, ns)
    return ns[name](*args)  # type: ignore[operator]


CHAT_FENCED = """Sure! Here is the function:

```python
def add(a, b):
    return a + b
```

It adds `a` and `b`. Example:

```python
print(add(1, 2))  # 3
```
"""

CHAT_UNTAGGED_WITH_HELPER = """```
import math

def _helper(x):
    return math.floor(x)

def add(a, b):
    return _helper(a) + _helper(b)

print(add(1.5, 2.5))
```"""

CHAT_PROSE_NO_FENCE = """Here's a solution in Python.

def add(a, b):
    \"\"\"Add.\"\"\"
    return a + b

This function returns the sum of its two arguments.
"""

CHAT_UNTERMINATED = "```python\ndef add(a, b):\n    return a + b\n"

CHAT_OTHER_LANGUAGE_FIRST = """Run it with:

```bash
python add.py
```

```py
def add(a, b):
    return b + a
```
"""

TWO_FUNCTIONS_MAIN_LAST = """```python
def add(a, b):
    return a - b

def add(a, b):
    return a + b

if __name__ == "__main__":
    assert add(2, 2) == 4
```"""


@pytest.mark.parametrize(
    "answer",
    [
        CHAT_FENCED,
        CHAT_UNTAGGED_WITH_HELPER,
        CHAT_PROSE_NO_FENCE,
        CHAT_UNTERMINATED,
        CHAT_OTHER_LANGUAGE_FIRST,
        TWO_FUNCTIONS_MAIN_LAST,
    ],
)
def test_chat_shapes_yield_a_runnable_program_defining_add(answer):
    found = extract_function(ADD, answer)
    assert found.ok, found
    assert found.code is not None
    assert _run(found.code, "add", 2, 3) == 5
    assert "print(" not in found.code  # usage examples are dropped, so running only defines


def test_stub_continuation_of_a_completion_model():
    prompt = completion_prompt(ADD)
    found = extract_function(ADD, "    return a + b\n", prompt)
    assert found.ok and found.code is not None and found.code.startswith("def add(a, b):")
    assert _run(found.code, "add", 2, 3) == 5


def test_open_def_continuation_with_trailing_junk_after_the_function():
    prompt = completion_prompt(MEAN)
    assert prompt.endswith("def mean(")
    completion = "xs):\n    return sum(xs) / len(xs)\n\nThis computes the mean.\n"
    found = extract_function(MEAN, completion, prompt)
    assert found.ok, found
    assert found.code is not None and _run(found.code, "mean", [1, 2, 3]) == 2


@pytest.mark.parametrize(
    "answer, category, detail",
    [
        ("", "no_function", "the model returned nothing"),
        ("   \n", "no_function", "the model returned nothing"),
        ("I cannot help with that.", "no_function", "holds no Python function"),
        ("```python\nx = 1 + 2\n```", "no_function", "defines no function"),
        (
            "```python\ndef plus(a, b):\n    return a + b\n```",
            "wrong_function_name",
            "expected add, found plus",
        ),
        ("```python\ndef add(a):\n    return a\n```", "wrong_arg_count", "add(a) cannot be called with 2"),
        ("```python\ndef add(a, b, c):\n    return a\n```", "wrong_arg_count", "add(a, b, c)"),
        ("```python\ndef add(a, *, b):\n    return a\n```", "wrong_arg_count", "add(a, *, b)"),
        ("```python\ndef add(a, b:\n    return a\n```", "syntax_error", "SyntaxError"),
        ("```python\ndef add(a, b):\n    return a +\n```", "syntax_error", "SyntaxError"),
    ],
)
def test_what_is_wrong_is_named(answer, category, detail):
    found = extract_function(ADD, answer)
    assert found.category == category
    assert detail in found.detail


@pytest.mark.parametrize(
    "signature",
    ["def add(a, b, c=0):", "def add(*args):", "def add(a, /, b):", "def add(a, b, *, scale=1):"],
)
def test_signatures_that_accept_the_arity_are_fine(signature):
    found = extract_function(ADD, f"```python\n{signature}\n    return 0\n```")
    assert found.ok, found


def test_arity_is_not_checked_when_the_task_does_not_know_it():
    task = Task("x", "Anything.", "f", tests=("assert f() is None",))
    assert extract_function(task, "def f(a, b, c):\n    pass\n").ok


def test_a_method_with_the_right_name_inside_a_class_is_a_wrong_function_name():
    found = extract_function(
        ADD, "```python\nclass Solution:\n    def add(self, a, b):\n        return a + b\n```"
    )
    assert found.category == "wrong_function_name"
    assert "only inside a class" in found.detail
