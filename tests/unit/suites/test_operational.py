"""Algorithm 2 (operational robustness) on a scripted model whose code breaks exactly when a chosen
word is replaced, judged by the real oracle; the metrics; the CLI against a scripted server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from cctest.errors import ConfigError
from cctest.paraphrase import Distances, Synonyms, Vectors
from cctest.paraphrase import distance as d
from cctest.suites.operational import (
    Search,
    SearchSettings,
    check_descriptions,
    distinguishability,
    inputs_from_tests,
    inputs_generator,
    search_tasks,
    summarize_operational,
)
from cctest.tasks.model import Task
from cctest.tasks.oracle import OracleSettings, judge_many

RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
TASK = Task(
    task_id="add",
    description="Return the sum of the two given numbers.",
    name="add",
    args=("a", "b"),
    reference=RIGHT,
    tests=("assert add(1, 2) == 3", "assert add(-4, 4) == 0"),
)


NEIGHBOURS = Synonyms(
    {"return": ["render"], "sum": ["total"], "given": ["presented"], "numbers": ["values", "figures"]}
)


def scripted(breaking: str, seen: list[str]):
    """The model: right code unless the description holds ``breaking``."""

    async def ask(batch: list[Task]) -> list[tuple[str | None, str | None, bool]]:
        seen.append(f"batch {len(batch)}")
        seen.extend(t.description for t in batch)
        return [(WRONG if breaking in t.description else RIGHT, None, False) for t in batch]

    return ask


async def judge(items):
    """The oracle on the answers; None (no judgement) where the backend gave no answer."""
    got = iter(
        judge_many([(t, a, None) for t, a in items if a is not None], OracleSettings(inputs=4), workers=2)
    )
    return [None if a is None else next(got) for _, a in items]


def run(settings: SearchSettings, breaking: str, tasks=(TASK,)) -> tuple[list[Search], list[str]]:
    seen: list[str] = []
    searches = [Search(t, i, settings, NEIGHBOURS, Distances()) for i, t in enumerate(tasks)]
    order: list[str] = []
    asyncio.run(
        search_tasks(searches, scripted(breaking, seen), judge, lambda s: order.append(s.task.task_id))
    )
    assert sorted(order) == sorted(t.task_id for t in tasks)  # each search reported once
    return searches, seen


def test_first_failure_and_last_success_ordered_by_characters() -> None:
    (s,), seen = run(SearchSettings(n=1, k=1, metric="lev_char", reference="tests", budget=20), "total")
    texts = [q["text"] for q in s.queries]
    dists = {t: d.lev_char(TASK.description, t) for t in texts}
    assert texts == sorted(texts, key=lambda t: dists[t])  # asked in order of distance
    rec = s.record()
    assert s.status == "broken" and "total" in rec["first_failure"]["text"]
    assert rec["first_failure"]["replaced"] == [["sum", "total", 11]]
    ff = rec["first_failure"]["distance"]["lev_char"]
    assert ff == d.lev_char(TASK.description, "Return the total of the two given numbers.")
    before = [
        t
        for t in texts
        if dists[t] < ff or (dists[t] == ff and texts.index(t) < texts.index(rec["first_failure"]["text"]))
    ]
    if before:
        assert rec["last_success"]["text"] == before[-1]
    else:
        assert (
            rec["last_success"]["text"] == TASK.description
            and rec["last_success"]["distance"]["lev_char"] == 0
        )
    assert rec["query_count"] == 1 + len(texts) and seen[0] == "batch 1"


def test_ff_ls_ro_rstar_on_two_tasks() -> None:
    other = TASK.replace(task_id="add2", description="Give back the sum of the two given values.")
    settings = SearchSettings(n=1, k=1, reference="tests")  # ordered by Levenshtein on words
    searches, seen = run(settings, "total", tasks=(TASK, other))
    a, b = (s.record() for s in searches)
    # TASK: Render (pass) then total (fail); words: 1 each. other: 'Give back' has no neighbours here,
    # sum -> total is its first paraphrase: LS is the original (distance 0)
    assert [q["text"] for q in a["queries"]] == [
        "Render the sum of the two given numbers.",
        "Return the total of the two given numbers.",
    ]
    assert a["last_success"]["text"] == "Render the sum of the two given numbers."
    assert [q["text"] for q in b["queries"]] == ["Give back the total of the two given values."]
    assert b["last_success"]["text"] == other.description
    summary = summarize_operational([a, b])
    assert summary["r_o"]["lev_word"] == 1.0  # both first failures one word away
    assert summary["r_star"]["lev_word"] == 0.5  # LS at 1 and at 0
    assert summary["r_o"]["lev_char"] == pytest.approx(
        (
            d.lev_char(TASK.description, a["first_failure"]["text"])
            + d.lev_char(other.description, b["first_failure"]["text"])
        )
        / 2
    )
    assert summary["unbroken"] == 0 and summary["queries_per_task"] == (3 + 2) / 2
    assert [f["task"] for f in summary["first_failures"]] == ["add", "add2"]
    assert summary["first_failures"][0]["category"] == "assertion_error"
    assert summary["first_failures"][0]["replaced"] == [["sum", "total", 11]]
    # every step asks both tasks in one call: originals, then each task's next paraphrase
    assert [x for x in seen if x.startswith("batch")] == ["batch 2", "batch 2", "batch 1"]


def _one_broken_one_unbroken() -> list[dict[str, Any]]:
    """Two tasks' records, one broken at word distance 1 (LS at 0), one unbroken within the budget."""
    broken = {
        "task_id": "a",
        "description": "t",
        "status": "broken",
        "query_count": 2,
        "first_failure": {
            "text": "x",
            "distance": {"lev_word": 1.0, "cosine": None},
            "replaced": [],
            "category": "assertion_error",
        },
        "last_success": {"text": "t", "distance": {"lev_word": 0.0, "cosine": None}},
    }
    unbroken = {
        "task_id": "b",
        "description": "u",
        "status": "unbroken",
        "query_count": 20,
        "first_failure": None,
        "last_success": None,
    }
    return [broken, unbroken]


def test_r_o_is_ffsum_over_every_task_as_algorithm_2_line_41() -> None:
    # Rᵒ = FFSum / |T| = 1 / 2, R* = LSSum / |T| = 0 / 2; the mean over broken tasks is 1 and 0
    summary = summarize_operational(_one_broken_one_unbroken())
    assert summary["r_o"]["lev_word"] == 0.5 and summary["r_star"]["lev_word"] == 0.0
    assert summary["r_tasks"] == 2
    assert summary["r_o_broken_mean"]["lev_word"] == 1.0 and summary["r_star_broken_mean"]["lev_word"] == 0.0
    assert summary["r_o"]["cosine"] is None and summary["r_o_broken_mean"]["cosine"] is None


def test_the_reports_say_r_o_as_the_paper_the_broken_task_means_beside_it_and_no_budget() -> None:
    """The terminal and report.html label Rᵒ and R* as FFSum/|T| and LSSum/|T| (the paper's), show
    cctest's means over the broken tasks beside them, and say that no budget was set (not 'None')."""
    import html

    from cctest.bench.report import report_page, terminal_report
    from cctest.suites.operational import OperationalKind

    records = _one_broken_one_unbroken()
    summary = summarize_operational(records)
    title, (headers, rows) = next(
        (t, v) for t, v in OperationalKind().tables(summary).items() if t.startswith("Rᵒ and R*")
    )
    assert title.endswith("over |T| = 2 tasks")
    assert headers == [
        "metric",
        "Rᵒ = FFSum/|T|",
        "R* = LSSum/|T|",
        "Rᵒ, mean over broken tasks",
        "R*, mean over broken tasks",
    ]
    assert rows == [["cosine", "—", "—", "—", "—"], ["lev_word", "0.500", "0.000", "1.000", "0.000"]]
    search = SearchSettings().to_dict()
    assert search["budget"] is None  # the paper's search: widen until the first failure
    config = {
        "kind": "operational",
        "backend": "http",
        "model": "m",
        "mode": "chat",
        "suite": {"search": search},
    }
    out = terminal_report(summary, config)
    page = html.unescape(report_page(config, summary, records))
    for text in (out, page):
        assert " · no budget (widen until the first failure) · " in text and "budget None" not in text
        assert title in text and all(h in text for h in headers)
    assert "lev_word  0.500" in out and "<td>1.000</td>" in page
    config["suite"] = {"search": {**search, "budget": 20}}
    assert " · budget 20 · " in terminal_report(summary, config).splitlines()[0]


def test_widening_reaches_the_second_neighbour() -> None:
    (s,), _ = run(SearchSettings(n=1, k=1, reference="tests"), "figures")
    rec = s.record()
    assert s.status == "broken" and rec["widenings"] == 1 and (rec["n"], rec["k"]) == (2, 2)
    texts = [q["text"] for q in rec["queries"]]
    # the four order-1 paraphrases with n = 1, then the new ones of distance 1, in text order
    assert len(texts) == 5 and texts[-1] == "Return the sum of the two given figures."
    assert {q["n"] for q in rec["queries"]} == {1, 2}
    assert rec["first_failure"]["n"] == 2


def test_budget_stops_the_search() -> None:
    (s,), seen = run(SearchSettings(n=1, k=1, reference="tests", budget=3), "figures")
    rec = s.record()
    assert s.status == "unbroken" and rec["query_count"] == 3 and rec["first_failure"] is None
    summary = summarize_operational([rec])
    assert summary["unbroken"] == 1 and summary["r_o"] == {} and summary["unbroken_tasks"] == ["add"]


def test_original_reading_compares_with_the_original_code() -> None:
    # the model is wrong on the original already: under 'tests' the task is reported apart,
    # under 'original' a paraphrase is equivalent when it is as wrong as C_t
    (s,), _ = run(SearchSettings(n=1, k=1, reference="tests"), "sum")
    assert s.status == "original_failed" and s.record()["original"]["category"] == "assertion_error"
    (s,), _ = run(SearchSettings(n=1, k=1, reference="original"), "sum")
    rec = s.record()
    assert s.status == "broken"
    assert rec["first_failure"]["text"] == "Return the total of the two given numbers."
    assert rec["first_failure"]["category"] == "fuzzing_failure"  # differs from C_t on the tests' inputs
    assert rec["queries"][0]["passed"]  # Render...: as wrong as the original, so equivalent


def test_a_backend_error_is_recorded_and_the_search_goes_on() -> None:
    """A paraphrase the backend cannot answer is recorded with its error, counts against the
    budget and is skipped (neither pass nor fail, never the last success); an original that cannot
    be answered stops that task as backend_error, while the other task's search goes on."""
    lost = "Render the sum of the two given numbers."
    other = TASK.replace(task_id="down", description="Add the two given numbers.")

    async def ask(batch: list[Task]) -> list[tuple[str | None, str | None, bool]]:
        out: list[tuple[str | None, str | None, bool]] = []
        for t in batch:
            if t.description in (lost, other.description):
                out.append((None, "http://127.0.0.1:1 answered 503 Service Unavailable.", False))
            else:
                out.append((WRONG if "total" in t.description else RIGHT, None, False))
        return out

    settings = SearchSettings(n=1, k=1, reference="tests")
    searches = [Search(t, i, settings, NEIGHBOURS, Distances()) for i, t in enumerate((TASK, other))]
    done: list[str] = []
    asyncio.run(search_tasks(searches, ask, judge, lambda s: done.append(s.task.task_id)))
    a, b = (s.record() for s in searches)
    assert b["status"] == "backend_error" and b["queries"] == [] and "503" in b["original"]["error"]
    assert a["status"] == "broken" and [q["text"] for q in a["queries"]] == [
        lost,
        "Return the total of the two given numbers.",
    ]
    first = a["queries"][0]
    assert first["passed"] is None and first["category"] is None and "503" in first["error"]
    assert a["last_success"]["text"] == TASK.description  # the unanswered paraphrase is no success
    assert a["errors"] == 1 and a["query_count"] == 3
    summary = summarize_operational([a, b])
    assert summary["status"]["backend_error"] == 1 and summary["queries"]["errors"] == 1
    assert summary["r_star"]["lev_word"] == 0 and summary["counts"]["backend_errors"] == 2
    assert sorted(done) == ["add", "down"]


def test_inputs_come_from_the_tests() -> None:
    he = TASK.replace(
        tests=(
            "def check(candidate):\n    assert candidate(1, 2) == 3\n"
            "    assert candidate([1], 'x') == 0\n\ncheck(add)\n",
        )
    )
    assert inputs_from_tests(he) == [(1, 2), ([1], "x")]
    src = inputs_generator(he)
    assert src is not None
    space: dict[str, object] = {}
    exec(src, space)
    gen = space["generate"]
    assert [gen(None) for _ in range(3)] == [(1, 2), ([1], "x"), (1, 2)]  # type: ignore[operator]


def test_distinguishability_on_hand_computed_pools() -> None:
    recs = [{"pool": {"m": [1.0, 1.0, 2.0, 3.0]}}, {"pool": {"m": [0.0, 3.0]}}]
    got = distinguishability(recs)["m"]
    assert got["uniqueness"] == pytest.approx((2 / 4 + 2 / 2) / 2)
    assert got["distinctness"] == pytest.approx((3 / 4 + 2 / 2) / 2)
    # normalised by min 0, max 3: task 1 values 1/3 1/3 2/3 1; sum over ordered pairs of |x - y|
    first = sum(abs(x - y) for x in (1 / 3, 1 / 3, 2 / 3, 1) for y in (1 / 3, 1 / 3, 2 / 3, 1)) / 16
    second = (1 + 1) / 4
    assert got["differentness"] == pytest.approx((first + second) / 2)


def test_descriptions_over_the_bounds_are_refused() -> None:
    """Every paraphrase is a copy of the description measured by every metric: a description over
    10,000 characters or 1,000 words is refused before any query, naming the task."""
    fits = TASK.replace(description=" ".join(["word"] * 1000))
    check_descriptions([TASK, fits])
    for description, size in (
        (" ".join(["word"] * 1001), "1,001 words"),
        ("w" * 10_001, "10,001 characters"),
        ("x" * 1_000_000 + " sum", "1,000,004 characters"),
    ):
        with pytest.raises(
            ConfigError, match=rf"task 'long' has a description of {size}; .* at most 10,000 "
        ):
            check_descriptions([TASK, TASK.replace(task_id="long", description=description)])


def test_a_search_makes_at_most_max_paraphrases() -> None:
    """300 replaceable words with 5 neighbours each: 1,500 paraphrases at n = 5 and more with every
    widening; the search's paraphrases (generated, measured, asked) stop at max_paraphrases."""
    words = ("count", "every", "large", "number", "given", "here")
    source = Synonyms({w: [f"{w}{i}" for i in "abcdefgh"] for w in words})
    task = TASK.replace(description=" ".join(words * 50) + ".")
    s = Search(task, 0, SearchSettings(n=5, k=3, budget=10_000, max_paraphrases=40), source, Distances())
    while (q := s.next_query()) is not None:
        s.answered(q, passed=True)  # the model never breaks: the search widens until it may not
    rec = s.record()
    assert s.status == "unbroken" and len(rec["queries"]) == 40 and len(s.seen) == 41
    assert {len(v) for v in rec["pool"].values()} == {40}
    with pytest.raises(ConfigError, match="--max_paraphrases must be at least 1"):
        SearchSettings(max_paraphrases=0)


def test_an_unmeasurable_distance_is_null_and_ordered_last(tmp_path) -> None:
    """'tot-al' is a word of the vectors file, but a text is split at '-': no word of the
    paraphrase has a vector, so its vector distances cannot be measured. They are None (JSON
    null), never NaN (which strict JSON readers refuse), and such paraphrases are asked last."""
    vectors_file = tmp_path / "glove.txt"
    vectors_file.write_text("sum 1 0\ntot-al 0.9 0.1\ntotal 0.8 0.2\n", encoding="utf-8")
    vectors = Vectors(vectors_file)
    task = TASK.replace(description="Return the sum of the two numbers.")
    s = Search(task, 0, SearchSettings(n=2, k=1, metric="cosine"), vectors, Distances(vectors=vectors))
    first, second = s.next_query(), s.next_query()
    assert first is not None and second is not None
    assert first["text"] == "Return the total of the two numbers." and first["distance"]["cosine"] >= 0
    assert second["text"] == "Return the tot-al of the two numbers."
    assert second["distance"]["cosine"] is None and second["distance"]["euclidean"] is None
    s.answered(first, passed=True)
    s.answered(second, passed=False)
    rec = s.record()
    assert rec["pool"]["cosine"] == [round(first["distance"]["cosine"], 6)]
    json.dumps(rec, allow_nan=False)  # strict JSON
    summary = summarize_operational([rec])
    assert summary["r_o"]["cosine"] is None and summary["r_star"]["cosine"] == first["distance"]["cosine"]
    json.dumps(summary, allow_nan=False)


def _search_alone(settings: SearchSettings, source: Synonyms, breaking: str, task: Task = TASK) -> Search:
    s = Search(task, 0, settings, source, Distances())
    asyncio.run(search_tasks([s], scripted(breaking, []), judge))
    return s


def test_the_papers_search_is_the_default() -> None:
    """Algorithm 2 as written: no query budget, every mutant, any word; cctest's earlier defaults
    (budget 20, 50 per order, stop-words kept) are named settings."""
    default = SearchSettings()
    assert (default.budget, default.per_order, default.protect_stop_words) == (None, None, False)
    assert default.max_paraphrases == 1000 and (default.n, default.k, default.c_n, default.c_k) == (
        5,
        5,
        1,
        1,
    )
    with pytest.raises(ConfigError, match="--per-order must be at least 1"):
        SearchSettings(per_order=0)


def test_the_search_widens_past_twenty_queries_until_the_first_failure() -> None:
    """With no budget the search widens n until the first failure: here the 30th neighbour of
    'sum', 30 paraphrases on (cctest's earlier budget of 20 queries ended it unbroken)."""
    source = Synonyms({"sum": [f"total{i}" for i in range(30)]})
    s = _search_alone(SearchSettings(n=1, k=1, reference="tests"), source, "total29")
    rec = s.record()
    assert s.status == "broken" and rec["query_count"] == 31 and rec["widenings"] == 29
    assert rec["first_failure"]["text"] == "Return the total29 of the two given numbers."
    s = _search_alone(SearchSettings(n=1, k=1, reference="tests", budget=20), source, "total29")
    assert s.status == "unbroken" and s.record()["query_count"] == 20


def test_the_search_ends_unbroken_when_nothing_new_is_left() -> None:
    s = _search_alone(SearchSettings(n=1, k=1, reference="tests"), NEIGHBOURS, "never")
    rec = s.record()
    # every mutant of the 4 words with neighbours (1, 1, 1 and 2 of them): 2 * 2 * 2 * 3 - 1 = 23
    assert s.status == "unbroken" and len(rec["queries"]) == 23 and not rec["sampled"]


def test_stop_words_are_replaced_unless_protected() -> None:
    """The paper's Table 2 replaces 'a', 'to', 'with': so does the search by default."""
    source = Synonyms({"the": ["a"], "sum": ["total"]})
    s = _search_alone(SearchSettings(n=1, k=1, reference="tests"), source, "a sum")
    assert s.record()["first_failure"]["replaced"] == [["the", "a", 7]]
    s = _search_alone(SearchSettings(n=1, k=1, reference="tests", protect_stop_words=True), source, "a sum")
    assert s.status == "unbroken" and [q["text"] for q in s.queries] == [
        "Return the total of the two given numbers."
    ]


def test_a_sampled_task_is_said_in_the_summary() -> None:
    """Paraphrases are sampled only past max_paraphrases; the record and the summary say which
    tasks were, and the search table (terminal and report) counts them."""
    from cctest.suites.operational import OperationalKind

    words = ("count", "every", "large", "number", "given", "here")
    source = Synonyms({w: [f"{w}{i}" for i in "abcde"] for w in words})
    big = TASK.replace(task_id="big", description=" ".join(words) + ".")
    s = Search(big, 0, SearchSettings(n=5, k=3, max_paraphrases=1000), source, Distances())
    assert s.next_query() is not None and s.sampled  # 2,905 mutants up to order 3, 1,000 made
    small = Search(TASK, 1, SearchSettings(n=1, k=1), NEIGHBOURS, Distances())
    assert small.next_query() is not None and not small.sampled
    summary = summarize_operational([s.record(), small.record()])
    assert summary["sampled"] == 1 and summary["sampled_tasks"] == ["big"]
    rows = dict(OperationalKind().tables(summary)["Search"][1])
    assert rows["tasks whose paraphrases were sampled (not every mutant)"] == "1"
