"""The backend interface: a list of prompts in, a list of completions out, asynchronously.

The engine sends the original prompt and all its mutants in ONE call, so a backend can batch them
(one ``generate`` call, or concurrent HTTP requests). A backend reports a failure of one prompt as
a ``BackendError`` in that prompt's place; it raises only when the whole call failed.

Instruction (chat) models are asked through ``chat`` (``ChatModel``): conversations of messages
in, one answer each out, with the same batching and error contract.

``Backend`` is the small core every backend has. What only some backends can do is a capability,
a ``typing.Protocol`` a backend has when it has its methods, and that the engine tests with
``isinstance`` (never by reading a signature):

* ``FimLayout``: how the code after the cursor reaches the model (``fim_used``,
  ``reads_suffix_first``, ``suffix_shown``); without it, left to right;
* ``DecidesEarly``: ``complete_deciding``, stop every row after a few tokens and finish the one
  a decision (a value the engine hands it) picks; without it, every row is completed whole;
* ``CompletesInGroups``: ``complete_groups``, a batch of several prompts' rows laid out per
  prompt; without it, ``complete`` of all of them;
* ``KnowsContext``: ``context``, the most tokens its model is shown; without it, the engine counts
  a mutant's cost within ``DEFAULT_HORIZON`` tokens before the cursor;
* ``ChatModel``: ``chat``, answers to conversations; a caller asking a backend without it says
  so in one sentence (``cannot_chat``);
* ``InstructionModel``: a ``ChatModel`` that knows whether its model is an instruction model
  (``prefers_chat``), so that tasks are asked as chats;
* ``SeedsEachRequest``: ``complete_seeded`` and ``chat_seeded``, each prompt sampled by a seed of
  its own, so a task's rounds are separate answers; without it, one call samples them all from
  the run's seed.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

from ..config import Settings
from ..errors import BackendError

# the completion of one prompt: its text, or the error that prevented it
Outcome = str | BackendError
# one message of a chat: {"role": "system" | "user" | "assistant", "content": "..."}
Message = dict[str, str]
# where a model that continues plain_chat_template's text starts a turn of its own
PLAIN_CHAT_STOP = "\n### "
# given every row's completion so far, the row to finish (None: none)
Decide = Callable[[list[Outcome]], int | None]


class Unfinished(abc.ABC):
    """The rows an early decision cut (``Decided.rest``), kept so they can be run on to their ends:
    the verdict on whole completions, once the answer is given. Holding one holds the batch's
    model state (its key/value cache); ``close`` lets it go."""

    @abc.abstractmethod
    async def finish(self) -> list[Outcome] | None:
        """Every row's whole completion, as an undecided ``complete`` gives it; None once closed.
        Work that can wait: it gives the model up to any call queued behind it and goes on after."""

    @abc.abstractmethod
    def close(self) -> None:
        """Let the kept state go (``finish`` then returns None)."""


class Decided(NamedTuple):
    """What ``Backend.complete_deciding`` returns."""

    outcomes: list[Outcome]  # one per prompt; all but ``chosen`` may end where the decision was made
    chosen: int | None  # the row ``decide`` chose, finished alone; None: ``decide`` was not asked
    cut: tuple[int, ...] = ()  # the rows that had not ended when the decision stopped them
    rest: Unfinished | None = None  # the ``cut`` rows, to run on (None: the backend cannot)


def plain_chat_template(messages: Sequence[Message]) -> str:
    """Messages as plain text, for a model that has no chat template of its own.

    Each message becomes a ``### System:`` / ``### User:`` / ``### Assistant:`` section; the text
    ends with an open ``### Assistant:`` section for the model to continue, and the answer ends
    where the model starts another section (``PLAIN_CHAT_STOP``).
    """
    parts = [f"### {m.get('role', 'user').capitalize()}:\n{m.get('content', '').strip()}\n" for m in messages]
    parts.append("### Assistant:\n")
    return "\n".join(parts)


@dataclass(frozen=True)
class GenerationOptions:
    """How completions are generated; shared by every backend."""

    max_new_tokens: int = 64
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    stop: tuple[str, ...] = field(default_factory=tuple)  # extra stop sequences
    # the sampling seed sent to a server that takes one (temperature > 0 only); a prompt asked
    # several times in one call (a task's rounds) is sent seed, seed + 1, ... so each round differs
    # and a re-run asks the same
    seed: int | None = None


def generation_options(settings: Settings) -> GenerationOptions:
    """The generation options ``settings`` name, as every backend takes them."""
    return GenerationOptions(
        max_new_tokens=settings.max_new_tokens,
        temperature=settings.temperature,
        top_p=settings.top_p,
        stop=settings.stop,
        seed=settings.seed,
    )


class Backend(abc.ABC):
    """A completion model. Subclasses implement ``complete``; ``aclose`` releases resources."""

    name: str = "backend"

    @abc.abstractmethod
    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        """One completion (or error) per prompt, in order.

        ``suffixes``: the code after the cursor for each prompt (a renamed mutant's suffix uses the
        mutant's names), for backends that fill in the middle; None when there is none.
        """

    def requesting(self) -> contextlib.AbstractContextManager[None]:
        """Entered while an engine request is under way on this backend (mutants, model call,
        verdict): a backend whose work that can wait (``Unfinished.finish``) would compete with
        it for the CPU pauses that work meanwhile."""
        return contextlib.nullcontext()

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release sockets, threads or model memory."""

    async def __aenter__(self) -> Backend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def describe(self) -> str:
        """A short description for logs and the defect log (never a secret)."""
        return self.name


@runtime_checkable
class FimLayout(Protocol):
    """A backend that knows how the code after the cursor reaches its model."""

    def fim_used(self) -> str | None:
        """How the code after the cursor reaches the model (a FIM template, e.g.
        ``starcoder (psm)``, or ``suffix field``); None: it completes left to right."""
        ...

    @property
    def reads_suffix_first(self) -> bool:
        """Whether the model reads the code after the cursor before the prompt (a suffix-first
        FIM layout, SPM). A row whose suffix differs from the prompt's then parts from it at its
        start, and is read whole on its own. False: left to right, prefix first, or not known
        (a server's own ``suffix`` field)."""
        ...

    def suffix_shown(self, prompt: str, suffix: str) -> str:
        """The part of ``suffix`` the model is shown after ``prompt``'s cursor (a backend that cuts
        it to fit a context says how)."""
        ...


@runtime_checkable
class DecidesEarly(Protocol):
    """A backend that can stop every row after a few tokens and finish only the chosen one."""

    async def complete_deciding(
        self,
        prompts: Sequence[str],
        *,
        suffixes: Sequence[str] | None = None,
        after: int,
        decide: Decide,
    ) -> Decided:
        """``complete``, deciding early which row to finish: stop every row after ``after`` new
        tokens, ask ``decide`` (given every row's completion so far) which row to finish, and
        finish that row alone; the others keep what they wrote by then. ``decide`` is not asked
        when every row ended before (the completions are whole)."""
        ...


@runtime_checkable
class CompletesInGroups(Protocol):
    """A backend that lays a batch out as a whole (cuts it to the context), and can do so per
    prompt when one call carries several prompts' rows (``Engine.run_many``)."""

    async def complete_groups(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None, groups: Sequence[int]
    ) -> list[Outcome]:
        """``complete``, the prompts coming in runs of ``groups``' sizes, each one prompt and its
        mutants; each run is laid out on its own, so that a prompt's completions do not depend on
        the others in the call."""
        ...


@runtime_checkable
class KnowsContext(Protocol):
    """A backend that knows its model's context: the most tokens a row is shown (what the engine
    counts a mutant's cost within)."""

    @property
    def context(self) -> int:
        """The model's context in tokens (0: no limit declared)."""
        ...


@runtime_checkable
class ChatModel(Protocol):
    """A backend that answers conversations: what an instruction model replies."""

    async def chat(self, conversations: Sequence[Sequence[Message]]) -> list[Outcome]:
        """One answer (or error) per conversation, in order. Unlike ``complete``, an answer is not
        cut at the end of a code block (answers hold prose and fenced code)."""
        ...


@runtime_checkable
class InstructionModel(ChatModel, Protocol):
    """A ``ChatModel`` that knows whether its model is an instruction model."""

    @property
    def prefers_chat(self) -> bool:
        """An instruction model (e.g. its tokenizer has a chat template): tasks are asked as chats."""
        ...


@runtime_checkable
class SeedsEachRequest(Protocol):
    """A backend whose every prompt is sampled by a seed of its own, so that a prompt's answer
    depends on the prompt and its seed alone, not on the rest of the call: the http backend asks
    each prompt as a request of its own carrying its seed at every temperature (OpenAI's ``seed``,
    Ollama's ``options.seed``, TGI's ``parameters.seed``), whatever a server caches or batches; the
    hf backend samples each (prompt, seed) alone from a generator seeded with it (at temperature 0
    in one batch, as greedy decoding does not read a seed). A task's rounds then stay separate
    answers (``cctest.tasks.run.round_seed``)."""

    async def complete_seeded(self, prompts: Sequence[str], seeds: Sequence[int]) -> list[Outcome]:
        """One completion (or error) per prompt, each prompt sampled with its seed."""
        ...

    async def chat_seeded(
        self, conversations: Sequence[Sequence[Message]], seeds: Sequence[int]
    ) -> list[Outcome]:
        """One answer (or error) per conversation, each sampled with its seed."""
        ...


def cannot_chat(backend: Backend) -> BackendError:
    """The one sentence for asking ``backend``, which is no ``ChatModel``, to chat."""
    return BackendError(
        f"the {backend.name} backend cannot answer chat messages; use the hf or http backend."
    )
