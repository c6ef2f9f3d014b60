"""The task model and its JSONL loader: good files load, bad ones fail with a sentence naming the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cctest.errors import DatasetError, TaskError
from cctest.tasks import Task, load_tasks, write_tasks
from cctest.tasks.render import ChatStyle, chat_messages, completion_prompt, plain_chat_template

DATA = Path(__file__).parents[2] / "data" / "tasks" / "small.jsonl"


def test_loads_the_sample_file_in_order():
    tasks = load_tasks(DATA)
    assert [t.task_id for t in tasks] == ["add", "mean", "slice"]
    assert tasks[0].args == ("a", "b") and tasks[0].arity == 2
    assert tasks[1].args is None and tasks[1].arity == 1 and tasks[1].abs_tol == 0.02
    assert tasks[0].tests == ("assert add(1, 2) == 3", "assert add(-1, 1) == 0")


def test_round_trip_through_write_tasks(tmp_path):
    tasks = load_tasks(DATA)
    write_tasks(tmp_path / "t.jsonl", tasks)
    assert load_tasks(tmp_path / "t.jsonl") == tasks


def _write(tmp_path: Path, *objs: object) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(o if isinstance(o, str) else json.dumps(o) for o in objs) + "\n")
    return path


GOOD = {"task_id": "t", "description": "Return 1.", "name": "one", "args": [], "tests": ["assert one() == 1"]}


@pytest.mark.parametrize(
    "obj, message",
    [
        ({**GOOD, "description": ""}, "line 1 has no 'description'"),
        ({k: v for k, v in GOOD.items() if k != "name"}, "line 1 has no 'name'"),
        ({**GOOD, "name": "not a name"}, "Python identifier"),
        ({**GOOD, "args": "a, b"}, "'args' must be a list"),
        ({**GOOD, "args": ["a"], "arity": 2}, "arity 2 does not match 1 args"),
        ({**GOOD, "tests": [], "reference": None}, "give a reference or tests"),
        ({**GOOD, "generator": "def generate(rng): return ()"}, "generator but no reference"),
        ({**GOOD, "abs_tol": -1}, "abs_tol must be a number >= 0"),
        ({**GOOD, "expected": 3}, "unknown fields (expected)"),
        ("[1, 2]", "line 1 is not a JSON object"),
        ("{not json", "line 1 is not valid JSON"),
    ],
)
def test_bad_task_files_name_the_line_and_the_problem(tmp_path, obj, message):
    with pytest.raises(TaskError) as err:
        load_tasks(_write(tmp_path, obj))
    assert message in str(err.value)
    assert str(tmp_path) in str(err.value)
    assert isinstance(err.value, DatasetError)  # one exception tree: the CLI reports it in one sentence


def test_repeated_task_id_and_empty_and_missing_files(tmp_path):
    with pytest.raises(TaskError, match="line 2 repeats task_id 't'"):
        load_tasks(_write(tmp_path, GOOD, GOOD))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(TaskError, match="holds no tasks"):
        load_tasks(empty)
    with pytest.raises(TaskError, match="does not exist"):
        load_tasks(tmp_path / "nope.jsonl")


def test_completion_prompt_is_a_documented_stub_when_the_signature_is_known():
    task = load_tasks(DATA)[0]
    prompt = completion_prompt(task)
    assert prompt == 'def add(a, b):\n    """\n    Return the sum of a and b.\n    """\n'
    compile(prompt + "    return a + b\n", "x", "exec")


def test_completion_prompt_is_a_comment_and_an_open_def_without_args():
    task = load_tasks(DATA)[1]
    prompt = completion_prompt(task)
    assert prompt == "# Return the arithmetic mean of the list xs, rounded to 2 digits.\ndef mean("


def test_docstring_quotes_in_a_description_cannot_close_the_stub():
    task = Task(
        "q", 'Return the text """hi""" with a backslash \\n.', "q", args=("s",), tests=("assert q('')",)
    )
    prompt = completion_prompt(task)
    compile(prompt + "    return s\n", "x", "exec")


def test_chat_messages_default_wording_and_a_custom_one():
    add, mean = load_tasks(DATA)[:2]
    [msg] = chat_messages(add)
    assert msg["role"] == "user"
    assert msg["content"].startswith("Return the sum of a and b.")
    assert "`add(a, b)`" in msg["content"] and "```python" in msg["content"]
    assert "`mean` that takes 1 argument " in chat_messages(mean)[0]["content"]
    style = ChatStyle(instruction="Task: {description} Name: {name}/{arity}", system="Be terse.")
    assert chat_messages(mean, style) == [
        {"role": "system", "content": "Be terse."},
        {
            "role": "user",
            "content": "Task: Return the arithmetic mean of the list xs, rounded to 2 digits. Name: mean/1",
        },
    ]


def test_a_chat_template_with_an_unknown_placeholder_is_refused():
    from cctest.errors import ConfigError

    with pytest.raises(ConfigError, match="description"):
        ChatStyle(instruction="Write {name}")
    with pytest.raises(ConfigError, match="only"):
        ChatStyle(instruction="{description} {language}")


def test_plain_chat_template_ends_with_an_open_assistant_turn():
    text = plain_chat_template([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])
    assert text == "### System:\nS\n\n### User:\nU\n\n### Assistant:\n"
