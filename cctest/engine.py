"""The pipeline: prompt → mutants → completions → de-mutation → outliers → repaired completion.

One ``Engine`` serves the CLI, the language server and the benchmarks; none of them re-implements
a stage. Every stage is timed (``EngineResult.timings_ms``); ``engine_ms`` is everything but the
model, the figure the per-keystroke budget is about.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from . import detect, repair
from .backends.base import Backend, CompletesInGroups, DecidesEarly, FimLayout, KnowsContext, Unfinished
from .config import Settings
from .demutate import demutate, rename, uses_any
from .errors import BackendError
from .fit import fit_completion
from .mutators import MutationOutcome, generate_mutants, nearest_the_cursor
from .mutators.registry import family
from .mutators.selection import Costs, Reading, estimate_tokens, prefill_costs, within_budget
from .types import ORIGINAL, Completion, EngineResult, Mutant, Prefill, Prompt, Verdict

# the prompt a cost is counted within where the backend declares no context (a server's model)
DEFAULT_HORIZON = 2048
# candidates drawn, per mutant wanted, when the first k cost more than the budget
BUDGET_CANDIDATES = 3


@dataclass
class _Request:
    """A prompt between its mutants and its completions: what ``Engine._finish`` needs."""

    prompt: Prompt
    mutants: tuple[Mutant, ...]
    dropped: tuple[Mutant, ...]
    texts: list[str]  # what the backend completes: [original,] mutant_1, ...
    suffixes: list[str]
    original: str | None  # the original's completion when the caller already had it
    timings: dict[str, float]
    started: float
    prefill: Prefill | None = None  # what the rows cost to read, and the budget they were chosen in


@dataclass(frozen=True)
class Prepared:
    """The rows a ``run`` of a prompt sends to the backend (``Engine.prepare``): the prompt and
    its mutants, each one's code after the cursor (in its own names), and the mutants, whose
    renames map row ``i``'s completion back to the prompt's names (row 0: the prompt itself)."""

    texts: tuple[str, ...]
    suffixes: tuple[str, ...]
    mutants: tuple[Mutant, ...]

    def renames(self, row: int) -> dict[str, str]:
        """Row ``row``'s renames (mutant name -> the prompt's), empty for the prompt's own row."""
        return dict(self.mutants[row - 1].renames) if row else {}


class _Judged(NamedTuple):
    """Detection and repair over one set of completions ([original, mutant_1, ...])."""

    completions: list[Completion]
    matrix: list[list[float]]
    verdict: Verdict


class Engine:
    """Runs CCTest for one prompt at a time against one backend."""

    def __init__(self, backend: Backend, settings: Settings | None = None, **overrides: Any) -> None:
        self.backend = backend
        self.settings = (
            (settings or Settings()).replace(**overrides) if overrides else (settings or Settings())
        )

    async def run(
        self,
        prompt: Prompt | str,
        *,
        k: int | None = None,
        schemes: Sequence[str] | None = None,
        original: str | None = None,
    ) -> EngineResult:
        """Complete ``prompt`` and its mutants, flag outliers and choose the repaired completion.

        ``original``: the original prompt's completion when the caller already has it (the
        language server's monitor mode), so it is not requested again.
        Raises BackendError only when no prompt at all could be completed because of errors.
        """
        result, settling = await self._run(prompt, k, schemes, original)
        if settling is not None:  # nobody asked for the verdict on whole completions
            settling.close()
        return result

    async def run_settling(
        self,
        prompt: Prompt | str,
        *,
        k: int | None = None,
        schemes: Sequence[str] | None = None,
    ) -> tuple[EngineResult, Settling | None]:
        """``run``, and when it decided early and cut completions, what makes the verdict on whole
        completions afterwards (``Settling.result``): the answer comes from the first tokens, the
        defect log's verdict from the whole completions. None: the result is whole already (or
        the backend cannot run cut rows on)."""
        return await self._run(prompt, k, schemes, None)

    async def _run(
        self, prompt: Prompt | str, k: int | None, schemes: Sequence[str] | None, original: str | None
    ) -> tuple[EngineResult, Settling | None]:
        with self.backend.requesting():
            request = self._prepare(prompt, k, schemes, original)
            deciding = isinstance(self.backend, DecidesEarly) and self.settings.decide_after
            if deciding and original is None and len(request.texts) > 1:
                return await self._run_deciding(request)
            return self._finish(request, await self._complete(request), wall=True), None

    def variants(self, prompt: Prompt | str, *, k: int | None = None) -> list[str]:
        """The texts a ``run`` of ``prompt`` sends to the backend: the prompt, then its mutants."""
        return self.rows(prompt, k=k)[0]

    def rows(self, prompt: Prompt | str, *, k: int | None = None) -> tuple[list[str], list[str]]:
        """The texts a ``run`` of ``prompt`` sends to the backend (the prompt, then its mutants),
        and the code after each one's cursor (in each mutant's names)."""
        prepared = self.prepare(prompt, k=k)
        return list(prepared.texts), list(prepared.suffixes)

    def prepare(self, prompt: Prompt | str, *, k: int | None = None) -> Prepared:
        """The rows a ``run`` of ``prompt`` sends to the backend, and the mutants they come from
        (the same as ``run`` makes: the mutants depend only on the prompt and the settings)."""
        request = self._prepare(prompt, k, None, None)
        return Prepared(tuple(request.texts), tuple(request.suffixes), request.mutants)

    async def run_many(
        self,
        prompts: Sequence[Prompt | str],
        *,
        k: int | None = None,
        schemes: Sequence[str] | None = None,
    ) -> list[EngineResult | Exception]:
        """``run`` for several prompts with ONE backend call for all their variants (a batch
        benchmark's throughput: a local model's step costs about the same for a few more rows).

        Returns one result per prompt, or the exception that prompt's ``run`` would have raised.
        Each result's ``complete`` time is the shared call's time split by the prompts' shares of
        the rows."""
        requests: list[_Request | Exception] = []
        for p in prompts:
            try:
                requests.append(self._prepare(p, k, schemes, None))
            except Exception as exc:  # noqa: BLE001 - one prompt's failure is its own result
                requests.append(exc)
        ready = [r for r in requests if isinstance(r, _Request)]
        texts = [t for r in ready for t in r.texts]
        with_suffix = any(r.prompt.suffix for r in ready)
        suffixes = [s for r in ready for s in r.suffixes] if with_suffix else None
        t = time.perf_counter()
        # each prompt's rows are laid out (cut to the context) on their own, as in ``run``
        try:
            raw = await self._complete_rows(texts, suffixes, [len(r.texts) for r in ready]) if texts else []
        except Exception as exc:  # noqa: BLE001
            if len(ready) == 1:
                return [exc if isinstance(r, _Request) else r for r in requests]
            # the shared call failed: prompt by prompt, so a failure costs only its own prompt
            return [await self._alone(r) if isinstance(r, _Request) else r for r in requests]
        elapsed = (time.perf_counter() - t) * 1000
        out: list[EngineResult | Exception] = []
        at = 0
        for r in requests:
            if not isinstance(r, _Request):
                out.append(r)
                continue
            mine = raw[at : at + len(r.texts)]
            at += len(r.texts)
            r.timings["complete"] = elapsed * len(r.texts) / max(1, len(texts))
            try:
                out.append(self._finish(r, mine, wall=False))
            except Exception as exc:  # noqa: BLE001
                out.append(exc)
        return out

    async def _complete_rows(
        self, texts: list[str], suffixes: list[str] | None, groups: list[int]
    ) -> list[Any]:
        """Several prompts' rows in one backend call, laid out per prompt where the backend lays a
        batch out as a whole (``CompletesInGroups``)."""
        if isinstance(self.backend, CompletesInGroups):
            return await self.backend.complete_groups(texts, suffixes=suffixes, groups=groups)
        return await self.backend.complete(texts, suffixes=suffixes)

    async def _complete(self, request: _Request) -> list[Any]:
        """One prepared prompt's variants in a backend call of their own, timed."""
        t = time.perf_counter()
        raw = await self.backend.complete(
            request.texts, suffixes=request.suffixes if request.prompt.suffix else None
        )
        request.timings["complete"] = (time.perf_counter() - t) * 1000
        return raw

    async def _run_deciding(self, request: _Request) -> tuple[EngineResult, Settling | None]:
        """``run`` deciding early (the setting ``decide_after``): the backend writes every row's
        first tokens, detection and repair run on them (``decide``), and only the chosen row is
        finished. The verdict is the one made on those first tokens; the chosen completion is then
        the whole one. Only for a backend that ``DecidesEarly``."""
        s = self.settings
        assert isinstance(self.backend, DecidesEarly)
        judged: list[_Judged] = []

        def decide(partial: list[Any]) -> int | None:
            judged.append(self._judge(request, partial))
            return judged[-1].verdict.chosen

        t = time.perf_counter()
        got = await self.backend.complete_deciding(
            request.texts,
            suffixes=request.suffixes if request.prompt.suffix else None,
            after=s.decide_after,
            decide=decide,
        )
        request.timings["complete"] = (time.perf_counter() - t) * 1000
        if not judged:  # every row ended before the decision: all whole
            return self._finish(request, got.outcomes, wall=True), None
        early = judged[-1]
        for i in got.cut:
            early.completions[i] = dataclasses.replace(early.completions[i], cut=True)
        chosen = got.chosen
        whole = got.outcomes[chosen] if chosen is not None else None
        # a failure finishing the chosen row: its first tokens stand
        if chosen is not None and isinstance(whole, str):
            mutant = request.mutants[chosen - 1] if chosen else None
            text = fit_completion(request.texts[chosen], whole, request.suffixes[chosen], s.completion_scope)
            done = _completion(early.completions[chosen].source, text, mutant.renames if mutant else {})
            if done.is_result:
                early.completions[chosen] = done
        result = self._result(request, early, wall=True, decided_after=s.decide_after)
        settling = Settling(self, request, result, got.rest) if got.rest is not None else None
        return result, settling

    async def _alone(self, request: _Request) -> EngineResult | Exception:
        """``_complete`` and ``_finish`` for one prompt of ``run_many``; its failure as the result."""
        try:
            return self._finish(request, await self._complete(request), wall=False)
        except Exception as exc:  # noqa: BLE001
            return exc

    def _prepare(
        self, prompt: Prompt | str, k: int | None, schemes: Sequence[str] | None, original: str | None
    ) -> _Request:
        s = self.settings
        if isinstance(prompt, str):
            prompt = Prompt(text=prompt)
        timings: dict[str, float] = {}
        t0 = t = time.perf_counter()
        if s.reduce_formulas:
            from .formula.text import reduce_in_code  # late: SymPy loads only when asked for

            prompt = dataclasses.replace(prompt, text=reduce_in_code(prompt.text))

        k = s.mutants if k is None else k
        spare = self._spared_suffix(prompt)

        def made(n: int) -> MutationOutcome:
            return generate_mutants(
                prompt.text,
                schemes=tuple(schemes if schemes is not None else s.schemes),
                k=n,
                max_distance=s.max_distance,
                seed=s.seed,
                context=prompt.suffix,  # keyword calls after the cursor keep REP off those names
                spare=spare,
                near=s.near_sites,
            )

        outcome = made(k * s.mutant_pool)
        # the k changed nearest the cursor: the rows share more of the prompt (see mutant_pool)
        mutants: tuple[Mutant, ...] = tuple(nearest_the_cursor(prompt.text, outcome.mutants, k, spare))
        mutants, prefill, more_dropped = self._within_budget(prompt, mutants, k, made)
        seen = {m.text for m in outcome.dropped}
        dropped = (*outcome.dropped, *(m for m in more_dropped if m.text not in seen))
        timings["mutate"], t = _lap(t)

        texts = [m.text for m in mutants]
        # the code after the cursor, in each mutant's own names
        suffixes = [rename(prompt.suffix, {old: new for new, old in m.renames.items()}) for m in mutants]
        if original is None:
            texts.insert(0, prompt.text)
            suffixes.insert(0, prompt.suffix)
        return _Request(prompt, mutants, dropped, texts, suffixes, original, timings, t0, prefill)

    def _within_budget(
        self,
        prompt: Prompt,
        mutants: tuple[Mutant, ...],
        k: int,
        made: Callable[[int], MutationOutcome],
    ) -> tuple[tuple[Mutant, ...], Prefill, tuple[Mutant, ...]]:
        """``mutants`` when their rows cost the model at most ``prefill_budget`` times the plain
        prompt's tokens to read; else the k that ``within_budget`` chooses among more candidates
        (``BUDGET_CANDIDATES`` times k, drawn only then), and the candidates that drawing dropped
        for their distance. The one choice every face makes: the CLI, the language server, the
        proxy and ``cctest bench`` all prepare a request here."""
        budget = self.settings.prefill_budget
        reading = self._reading(prompt)
        costs = prefill_costs(prompt.text, mutants, reading)
        dropped: tuple[Mutant, ...] = ()
        if budget and mutants and costs.ratio() > budget:
            texts = {m.text for m in mutants}
            more = made(BUDGET_CANDIDATES * k)
            extra = [m for m in more.mutants if m.text not in texts]
            dropped = tuple(more.dropped)
            if extra:
                candidates = (*mutants, *extra)
                costs = prefill_costs(prompt.text, candidates, reading)
                chosen = within_budget(costs, [family(m.scheme) for m in candidates], k, budget)
                mutants = tuple(candidates[i] for i in chosen)
                costs = Costs(costs.plain, tuple(costs.own[i] for i in chosen))
        prefill = Prefill(
            plain=costs.plain, own=costs.own, budget=budget, horizon=reading.horizon, ratio=costs.ratio()
        )
        return mutants, prefill, dropped

    def _reading(self, prompt: Prompt) -> Reading:
        """How the backend's model reads a row (what a mutant's cost counts): the prompt within its
        context (``DEFAULT_HORIZON`` where the backend declares none), the code after the cursor
        where a FIM layout shows it, and whether that comes first."""
        backend = self.backend
        suffix, first = "", False
        if prompt.suffix.strip() and isinstance(backend, FimLayout) and backend.fim_used() is not None:
            suffix = backend.suffix_shown(prompt.text, prompt.suffix)
            first = backend.reads_suffix_first
        context = backend.context if isinstance(backend, KnowsContext) else 0
        if not context:
            return Reading(DEFAULT_HORIZON, suffix, first)
        room = context - self.settings.max_new_tokens - (estimate_tokens(suffix) if suffix else 0)
        return Reading(max(context // 4, room), suffix, first)

    def _spared_suffix(self, prompt: Prompt) -> str:
        """The code after the cursor that renames leave alone where they can (``spare_suffix``):
        the part the model is shown, when it reads it before the prompt; "" otherwise (left to
        right or prefix first, a changed suffix comes after the prompt's tokens and costs nothing)."""
        backend = self.backend
        if not (self.settings.spare_suffix and prompt.suffix.strip() and isinstance(backend, FimLayout)):
            return ""
        return backend.suffix_shown(prompt.text, prompt.suffix) if backend.reads_suffix_first else ""

    def _finish(self, request: _Request, raw: list[Any], *, wall: bool) -> EngineResult:
        return self._result(request, self._judge(request, raw), wall=wall)

    def _judge(self, request: _Request, raw: list[Any]) -> _Judged:
        """The completions, mapped back and compared; the outliers and the repaired choice."""
        s = self.settings
        prompt, mutants, timings = request.prompt, request.mutants, request.timings
        raw = list(raw)
        texts, suffixes = list(request.texts), list(request.suffixes)
        if request.original is not None:
            raw.insert(0, request.original)
            texts.insert(0, prompt.text)
            suffixes.insert(0, prompt.suffix)
        # every completion fits the code after its cursor and the completion scope
        raw = [
            fit_completion(text, r, suffix, s.completion_scope) if isinstance(r, str) else r
            for text, r, suffix in zip(texts, raw, suffixes, strict=True)
        ]
        t = time.perf_counter()
        errors = [r for r in raw if isinstance(r, BackendError)]
        if errors and len(errors) == len(raw):
            raise errors[0]

        completions = [_completion(ORIGINAL, raw[0], {})]
        for i, (m, r) in enumerate(zip(mutants, raw[1:], strict=True), start=1):
            completions.append(_completion(f"mutant:{i}:{m.scheme}", r, m.renames))
        timings["demutate"], t = _lap(t)

        valid = [c.is_result for c in completions]
        matrix = detect.similarity_matrix([c.text for c in completions], valid)
        n_valid = sum(valid)
        threshold = (
            s.threshold
            if s.threshold is not None
            else detect.absolute_threshold(s.relative_threshold, n_valid)
        )
        counts = detect.outlier_counts(matrix, valid)
        outliers = tuple(detect.outliers_from_counts(counts, threshold))
        timings["detect"], t = _lap(t)

        eligible = eligible_mask(mutants, completions)
        chosen = repair.choose(matrix, outliers, eligible)
        timings["repair"], t = _lap(t)
        verdict = Verdict(
            outliers=outliers,
            chosen=chosen,
            no_results=tuple(i for i, ok in enumerate(valid) if not ok),
            counts=tuple(counts),
            threshold=threshold,
        )
        return _Judged(completions, matrix, verdict)

    def _result(
        self, request: _Request, judged: _Judged, *, wall: bool, decided_after: int | None = None
    ) -> EngineResult:
        timings = request.timings
        stages = sum(timings[k] for k in ("mutate", "demutate", "detect", "repair"))
        if wall:  # everything from the prompt to the verdict; the engine is all but the model
            timings["total"] = (time.perf_counter() - request.started) * 1000
            # deciding early, detection ran while the model waited for it: the engine's own time
            timings["engine"] = stages if decided_after else timings["total"] - timings["complete"]
        else:  # in run_many other prompts' stages ran in between: the sum of this prompt's own
            timings["engine"] = stages
            timings["total"] = timings["engine"] + timings["complete"]
        return EngineResult(
            prompt=request.prompt,
            mutants=request.mutants,
            dropped_mutants=request.dropped,
            completions=tuple(judged.completions),
            similarity=tuple(tuple(row) for row in judged.matrix),
            verdict=judged.verdict,
            timings_ms=timings,
            decided_after=decided_after,
            prefill=request.prefill,
        )


class Settling:
    """The verdict on whole completions after an early decision answered (``Engine.run_settling``):
    the completions it cut are run on to their ends (work that can wait: the backend gives the
    model up to any call queued behind it), then compared again."""

    def __init__(self, engine: Engine, request: _Request, answered: EngineResult, rest: Unfinished) -> None:
        self._engine, self._request, self._rest = engine, request, rest
        self.answered = answered

    async def result(self) -> EngineResult | None:
        """``answered`` with every completion whole: its outliers are those of the whole
        completions, as an undecided run finds them; its chosen completion is still the one it
        answered with. None once ``close``d. Raises BackendError when the model fails."""
        t = time.perf_counter()
        raw = await self._rest.finish()
        if raw is None:
            return None
        answered = self.answered
        request = dataclasses.replace(self._request, timings=dict(answered.timings_ms))
        judged = self._engine._judge(request, raw)
        request.timings["settle"] = (time.perf_counter() - t) * 1000
        verdict = dataclasses.replace(judged.verdict, chosen=answered.chosen)
        completions = list(judged.completions)
        if answered.chosen is not None:  # what was answered (the same text, finished alone)
            completions[answered.chosen] = answered.completions[answered.chosen]
        return dataclasses.replace(
            answered,
            completions=tuple(completions),
            similarity=tuple(tuple(row) for row in judged.matrix),
            verdict=verdict,
            timings_ms=request.timings,
            settled=True,
        )

    def close(self) -> None:
        """Give the kept model state up without running on (``result`` then returns None)."""
        self._rest.close()


def eligible_mask(mutants: Sequence[Mutant], completions: Sequence[Completion]) -> list[bool]:
    """Which completions repair may return: ``completions`` is [original, mutant_1, ...].

    A completion that uses a name only a mutant had (GRA's dead variable) cannot be mapped back to
    the user's code, so it can be compared but never returned; one without a result never can.
    """
    eligible = [c.is_result for c in completions]
    for i, m in enumerate(mutants, start=1):
        if eligible[i] and m.introduced and uses_any(completions[i].text, m.introduced):
            eligible[i] = False
    return eligible


def _completion(source: str, raw: str | BackendError, renames: Any) -> Completion:
    if isinstance(raw, BackendError):
        return Completion(source=source, raw="", text="", error=str(raw))
    return Completion(source=source, raw=raw, text=demutate(raw, renames) if renames else raw)


def _lap(t: float) -> tuple[float, float]:
    now = time.perf_counter()
    return (now - t) * 1000, now
