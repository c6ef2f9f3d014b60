"""Rendering a task for a model: Python to continue (completion models) or messages (chat models).

* ``completion_prompt``: with the signature known, a ``def NAME(ARGS):`` stub whose docstring is
  the description; otherwise the description as a comment block followed by ``def NAME(``. The
  model's completion continues the prompt, so the answer is ``prompt + completion``
  (``parse.extract_function`` is told the prompt and joins them).
* ``chat_messages``: one user message (and an optional system message) worded by a template, by
  default ``DEFAULT_INSTRUCTION``: write one Python function, in a fenced block, no prose. The
  template is a setting; it sees ``{description}``, ``{name}``, ``{arity}`` and ``{signature}``
  (```name(a, b)``` in backticks, or ```name`` that takes 2 arguments`` when only the count is
  known).

``plain_chat_template`` (from ``cctest.backends.base``) is the documented plain text a chat
becomes for a model without a chat template of its own.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from ..backends.base import Message, plain_chat_template
from ..errors import ConfigError
from .model import Task

DEFAULT_INSTRUCTION = (
    "{description}\n\n"
    "Write a Python function {signature} that does this. Answer with only the code of the "
    "function (and any imports or helper functions it needs) in one ```python fenced block, "
    "with no explanation or usage examples."
)


@dataclass(frozen=True)
class ChatStyle:
    """How a task is worded for a chat model: the user message template and an optional system message."""

    instruction: str = DEFAULT_INSTRUCTION
    system: str | None = None

    def __post_init__(self) -> None:
        if "{description}" not in self.instruction:
            raise ConfigError("the chat instruction template must contain {description}.")
        try:
            self.instruction.format(description="", name="", signature="", arity="")
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                "the chat instruction template may use only {description}, {name}, {signature} and "
                f"{{arity}} (and '{{{{' / '}}}}' for literal braces): {exc!r} is not one of them."
            ) from None


def completion_prompt(task: Task) -> str:
    """The Python a completion model continues: a documented stub, or a comment and ``def NAME(``."""
    if task.args is not None:
        doc = task.description.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        body = textwrap.indent(doc, "    ")
        return f'def {task.name}({", ".join(task.args)}):\n    """\n{body}\n    """\n'
    comment = "\n".join(("# " + line).rstrip() for line in task.description.strip().splitlines())
    return f"{comment}\ndef {task.name}("


def chat_messages(task: Task, style: ChatStyle | None = None) -> list[Message]:
    """The messages that ask a chat model for the task's function."""
    style = style or ChatStyle()
    if task.signature is not None:
        signature = f"`{task.signature}`"
    elif task.arity is not None:
        signature = f"`{task.name}` that takes {task.arity} argument{'' if task.arity == 1 else 's'}"
    else:
        signature = f"`{task.name}`"
    user = style.instruction.format(
        description=task.description.strip(),
        name=task.name,
        signature=signature,
        arity="" if task.arity is None else str(task.arity),
    )
    messages: list[Message] = []
    if style.system:
        messages.append({"role": "system", "content": style.system})
    messages.append({"role": "user", "content": user})
    return messages


__all__ = [
    "DEFAULT_INSTRUCTION",
    "ChatStyle",
    "Message",
    "chat_messages",
    "completion_prompt",
    "plain_chat_template",
]
