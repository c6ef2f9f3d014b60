"""Natural-language coding tasks: the task model, rendering for completion and chat models,
answer parsing, and the oracle that judges an answer in the sandbox.

A suite is built on top of these (see ``docs/tasks.md``)::

    from cctest.tasks import Task, completion_prompt, chat_messages, judge_many, OracleSettings

    task = Task("add", "Return the sum of a and b.", "add", args=("a", "b"),
                reference="def add(a, b):\\n    return a + b\\n",
                generator="def generate(rng):\\n    return (rng.randint(-9, 9), rng.randint(-9, 9))\\n")
    prompt = completion_prompt(task)                   # or chat_messages(task) for a chat model
    judgements = judge_many([(task, completion, prompt)], OracleSettings(inputs=100))
    judgements[0].category                             # one of CATEGORIES
"""

from __future__ import annotations

from .model import Task, TaskSet, load_tasks, tasks_from_dicts, write_tasks
from .oracle import (
    CATEGORIES,
    Judgement,
    OracleSettings,
    check_reference,
    judge,
    judge_many,
    static_errors,
)
from .parse import Extracted, extract_code, extract_function
from .render import (
    DEFAULT_INSTRUCTION,
    ChatStyle,
    Message,
    chat_messages,
    completion_prompt,
    plain_chat_template,
)

__all__ = [
    "CATEGORIES",
    "DEFAULT_INSTRUCTION",
    "ChatStyle",
    "Extracted",
    "Judgement",
    "Message",
    "OracleSettings",
    "Task",
    "TaskSet",
    "chat_messages",
    "check_reference",
    "completion_prompt",
    "extract_code",
    "extract_function",
    "judge",
    "judge_many",
    "load_tasks",
    "plain_chat_template",
    "static_errors",
    "tasks_from_dicts",
    "write_tasks",
]
