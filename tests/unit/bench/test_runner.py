"""The bench command end to end with the rules backend: the run directory, resume after a kill,
the refusal of a resume with other settings, the report, comparison, and the CLI's errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cctest.backends.rules import RuleBackend
from cctest.bench.datasets import load_humaneval
from cctest.bench.runner import run_config
from cctest.bench.store import RunStore, load_run
from cctest.cli import main
from cctest.config import Settings
from cctest.detect import outlier_counts, similarity_matrix
from cctest.mutators import DEFAULT_SCHEMES

DATA = Path(__file__).parents[2] / "data" / "bench"
REQUIRED = {
    "structural_consistency",
    "no_results",
    "outliers_per_T",
    "bleu",
    "edit_similarity",
    "enhancement_ratio",
    "pass_at_1",
    "flag_vs_failure",
}


def _ids(run: Path) -> list[str]:
    return [r["task_id"] for r in RunStore(run).records()]


def test_jsonl_run_report_and_exact_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    rc = main(
        [
            "bench",
            "--dataset",
            str(DATA / "tasks.jsonl"),
            "--backend",
            "rules",
            "-k",
            "4",
            "--thresholds",
            "1,2",
            "--out",
            str(run),
            "--no-progress",
        ]
    )
    assert rc == 0
    summary = json.loads((run / "summary.json").read_text())
    assert REQUIRED <= set(summary)
    assert set(summary["pass_at_1"]) == {"original", "repaired"}
    assert set(summary["flag_vs_failure"]) == {"1", "2"}
    assert set(summary["flag_vs_failure"]["1"]) >= {"precision", "recall", "f1"}
    # the rules backend completes `return a + b`: right for add, wrong for mul (2 of 3 tasks have tests)
    assert summary["counts"]["prompts_with_tests"] == 2
    assert summary["pass_at_1"]["original"] == 0.5
    _, records = load_run(run)  # in task order (the file holds them in the order they were run)
    assert [r["index"] for r in records] == [0, 1, 2]
    add = records[0]
    assert add["task_id"] == "add" and add["tests"][0]["outcome"] == "passed"
    assert records[1]["tests"][0]["outcome"] == "assertion_failure"
    assert records[2]["tests"] is None  # no tests: nothing executed
    # every T is decided from the one stored matrix: recomputing Algorithm 1 gives the same outliers
    for r in records:
        valid = [c["is_result"] for c in r["completions"]]
        counts = outlier_counts(similarity_matrix([c["text"] for c in r["completions"]], valid), valid)
        assert counts == r["counts"]
        for t in ("1", "2"):
            assert r["per_T"][t]["outliers"] == [i for i, c in enumerate(counts) if c > float(t)]
    html = (run / "report.html").read_text()
    assert html.count("<svg") >= 4 and "Table VI" in html
    stored = json.loads((run / "config.json").read_text())
    assert stored["settings"] == Settings(backend="rules", mutants=4, schemes=DEFAULT_SCHEMES).to_dict()
    config = run_config(stored)
    assert (config["backend"], config["k"], config["thresholds"]) == ("rules", 4, [1.0, 2.0])
    # no --scheme: the run names every scheme it used; the rules backend has no model to name
    assert config["schemes"] == list(DEFAULT_SCHEMES) and config["model"] is None
    out = capsys.readouterr().out
    assert "Table V" in out and "pass@1" in out
    assert out.count("  enhancement ratio ") == 2  # the label as summary.json spells it


def test_thresholds_match_the_engine(tmp_path: Path) -> None:
    """The per-T decisions equal what the engine itself decides when run at that T."""
    import asyncio

    from cctest.engine import Engine

    run = tmp_path / "run"
    assert (
        main(
            [
                "bench",
                "--dataset",
                "humaneval",
                "--backend",
                "rules",
                "--model",
                "fragile=TempVar",
                "-k",
                "6",
                "--limit",
                "2",
                "--thresholds",
                "0,1",
                "--out",
                str(run),
                "--no-progress",
            ]
        )
        == 0
    )
    _, records = load_run(run)
    tasks = load_humaneval().tasks[:2]
    for rec, task in zip(records, tasks, strict=True):
        for t in (0.0, 1.0):
            engine = Engine(
                RuleBackend(fragile=("TempVar",)), Settings(backend="rules", mutants=6, threshold=t)
            )
            result = asyncio.run(engine.run(task.prompt))
            assert list(result.outliers) == rec["per_T"][f"{t:g}"]["outliers"]
            assert result.chosen == rec["per_T"][f"{t:g}"]["chosen"]


def test_resume_after_sigkill_loses_and_repeats_nothing(tmp_path: Path) -> None:
    # the kill comes when the first records are on disk: the tasks after the first three sleep
    # 2 s in their programs (at import, so whatever the completion, the sandbox runs it), so the
    # run is still under way when it is killed however fast the machine (HumanEval's tasks under
    # the rules backend were all written within a few ms once the first three were)
    limit = 8
    dataset = tmp_path / "tasks.jsonl"
    dataset.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": f"t{i}",
                    "prompt": ("import time\ntime.sleep(2)\n\n" if i >= 3 else "")
                    + f'def add_{i}(a, b):\n    """Return a + b."""\n    return ',
                    "ground_truth": "a + b\n",
                    "tests": f"assert add_{i}(1, 2) == 3\n",
                    "entry_point": f"add_{i}",
                }
            )
            + "\n"
            for i in range(limit)
        )
    )
    run = tmp_path / "run"
    args = [
        "bench",
        "--dataset",
        str(dataset),
        "--backend",
        "rules",
        "-k",
        "3",
        "--batch-prompts",
        "3",
        "--out",
        str(run),
        "--no-progress",
    ]
    # its own temporary directory, to see what the killed run leaves there
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cctest", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    results = run / "results.jsonl"
    try:
        # kill it as soon as two prompts are on disk, mid-run
        while proc.poll() is None and len(_ids(run) if results.exists() else []) < 2:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    before = _ids(run)
    assert 2 <= len(before) < limit, "the run finished before it could be killed"
    # a kill during a write leaves a torn line: simulate the worst case on top of the real kill
    with open(results, "ab") as f:
        f.write(b'{"task_id": "HumanEval/9", "inde')
    assert any(p.name.startswith("cctest-") for p in tmp.iterdir())  # the killed run's samples
    resumed = subprocess.run(
        [sys.executable, "-m", "cctest", *args, "--resume"], env=env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    # the resumed run removed the killed run's sample directories, and its own
    assert [p.name for p in tmp.iterdir() if p.name.startswith("cctest-")] == []
    after = _ids(run)
    expected = [f"t{i}" for i in range(limit)]
    assert sorted(after) == sorted(expected) and len(after) == len(set(after))
    assert after[: len(before)] == before  # the old records were kept, not redone
    assert json.loads((run / "summary.json").read_text())["counts"]["prompts"] == limit


def test_resume_with_other_settings_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    base = [
        "bench",
        "--dataset",
        str(DATA / "tasks.jsonl"),
        "--backend",
        "rules",
        "--out",
        str(run),
        "--no-progress",
    ]
    assert main([*base, "-k", "2", "--limit", "1"]) == 0
    capsys.readouterr()
    assert main([*base, "-k", "3", "--limit", "1", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "different settings (k)" in err and err.count("\n") == 1
    assert main([*base, "-k", "2", "--limit", "1"]) == 2  # an existing run is not overwritten
    assert "already holds a run" in capsys.readouterr().err

    # the FIM template and the completion scope are part of what a run is
    config = run_config(json.loads((run / "config.json").read_text()))
    assert config["fim"] == "auto" and config["completion_scope"] == "block"
    assert main([*base, "-k", "2", "--limit", "1", "--fim", "off", "--resume"]) == 2
    assert "different settings (fim)" in capsys.readouterr().err
    assert main([*base, "-k", "2", "--limit", "1", "--completion-scope", "line", "--resume"]) == 2
    assert "different settings (completion_scope)" in capsys.readouterr().err
    # a run recorded before these settings were (config.json's flat shape, as run_config reads
    # it): it was made with their defaults and resumes so
    for key in ("fim", "completion_scope", "mutant_pool"):
        del config[key]
    (run / "config.json").write_text(json.dumps(config))
    assert main([*base, "-k", "2", "--limit", "1", "--resume"]) == 0, capsys.readouterr().err

    # renames that spare the suffix are part of what a run is; a run from before the setting
    # existed was made without them
    assert config["spare_suffix"] is True
    assert main([*base, "-k", "2", "--limit", "1", "--no-spare-suffix", "--resume"]) == 2
    assert "different settings (spare_suffix)" in capsys.readouterr().err
    del config["spare_suffix"]
    (run / "config.json").write_text(json.dumps(config))
    assert main([*base, "-k", "2", "--limit", "1", "--resume"]) == 2
    assert "different settings (spare_suffix)" in capsys.readouterr().err
    assert main([*base, "-k", "2", "--limit", "1", "--no-spare-suffix", "--resume"]) == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "--dataset", "/no/such/file.jsonl"], "does not exist"),
        (["bench", "--dataset", "humaneval", "--resume"], "--resume needs --out"),
        (["bench", "--dataset", "humaneval", "--thresholds", "1,x"], "--thresholds must be numbers"),
        (["bench", "--dataset", "humaneval", "--scheme", "FOO"], "unknown mutation scheme 'FOO'"),
        (["bench"], "needs --dataset"),
        (["bench", "--dataset", "humaneval", "--decide-after", "-1"], "--decide-after must be 0 or more"),
        (["bench", "compare", "a"], "usage: cctest bench compare"),
    ],
)
def test_errors_are_one_sentence_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    model = [] if "compare" in argv else ["--backend", "rules"]  # compare asks no model
    assert main([*argv, *model]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "the default is used" not in err


def test_malformed_jsonl_and_missing_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "def f():\\n"}\n{oops}\n')
    assert main(["bench", "--dataset", str(bad), "--backend", "rules", "--out", str(tmp_path / "r")]) == 2
    assert "line 2 is not valid JSON" in capsys.readouterr().err
    good = str(DATA / "tasks.jsonl")
    assert (
        main(["bench", "--dataset", good, "--backend", "rules", "--out", str(tmp_path / "none"), "--resume"])
        == 2
    )
    assert "no run to resume" in capsys.readouterr().err


def test_model_that_fails_to_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    rc = main(
        [
            "bench",
            "--dataset",
            str(DATA / "tasks.jsonl"),
            "--backend",
            "hf",
            "--model",
            str(empty),
            "--out",
            str(tmp_path / "r"),
            "--no-progress",
        ]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("cctest: ") and err.count("\n") == 1


def test_compare_two_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    common = ["--dataset", str(DATA / "tasks.jsonl"), "--backend", "rules", "-k", "4", "--no-progress"]
    assert main(["bench", *common, "--out", str(a)]) == 0
    assert main(["bench", *common, "--model", "fragile=TempVar", "--out", str(b)]) == 0
    capsys.readouterr()
    assert main(["bench", "compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "fragile=TempVar" in out and "pass@1 original" in out
    html = (tmp_path / "cmp" / "compare.html").read_text()
    assert "a vs b" in html and html.count("<svg") >= 3
    # without --out, compare.html goes next to RUN_A, as --help says
    assert main(["bench", "compare", str(a), str(b)]) == 0
    assert (
        tmp_path / "compare.html"
    ).is_file() and f"wrote {tmp_path / 'compare.html'}" in capsys.readouterr().err
    helptext = subprocess.run(
        [sys.executable, "-m", "cctest", "bench", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "(default: the one that holds RUN_A)" in " ".join(helptext.split())


@pytest.mark.slow
def test_small_real_run_with_the_bundled_model(tmp_path: Path) -> None:
    """The real hf backend and the bundled model: one prompt, two mutants, a few tokens."""
    pytest.importorskip("transformers")
    run = tmp_path / "run"
    rc = main(
        [
            "bench",
            "--dataset",
            "humaneval",
            "--backend",
            "hf",
            "--limit",
            "1",
            "-k",
            "2",
            "--max-new-tokens",
            "8",
            "--threads",
            "1",
            "--out",
            str(run),
            "--no-progress",
        ]
    )
    assert rc == 0
    (record,) = RunStore(run).records()
    assert record["task_id"] == "HumanEval/0" and record["error"] is None
    assert len(record["completions"]) == 1 + len(record["mutants"])
    # whatever the model wrote, every completion with a result was executed and classified
    for c, outcome in zip(record["completions"], record["tests"], strict=True):
        assert (outcome is not None) == c["is_result"]
    summary = json.loads((run / "summary.json").read_text())
    assert REQUIRED <= set(summary) and summary["counts"]["prompts"] == 1
    config = run_config(json.loads((run / "config.json").read_text()))
    assert config["model"] == "cctest-code-small (bundled)"
    assert "<td>model</td><td>cctest-code-small (bundled)</td>" in (run / "report.html").read_text()


def test_decide_after_asks_each_prompt_as_the_editor_does(tmp_path: Path) -> None:
    """``--decide-after``: each prompt also goes through the editor's repair mode deciding early
    (the real hf backend); the chosen row, finished alone, is the text the run has for that row."""
    pytest.importorskip("transformers")
    run = tmp_path / "run"
    argv = ["bench", "--dataset", "humaneval", "--backend", "hf", "--limit", "2", "-k", "3"]
    argv += ["--max-new-tokens", "16", "--threads", "1", "--decide-after", "4", "--out", str(run)]
    assert main([*argv, "--no-progress"]) == 0
    records = RunStore(run).records()
    assert len(records) == 2
    for record in records:
        early = record["early"]
        assert early["after"] == 4 and early["error"] is None
        assert len(early["completions"]) == len(record["completions"])
        assert set(early["per_T"]) == set(record["per_T"])
        if early["decided_after"] is not None:  # a row ran past 4 tokens: the others were cut
            assert early["decided_after"] == 4 and early["cut"]
            assert early["chosen"] not in early["cut"]
        if early["chosen"] is not None:
            assert early["chosen_as_full"] is True
        # the cut completions run on to their ends: the run's whole completions, so the run's
        # outliers, with the early choice; nothing cut: no settled entry (the early verdict is whole)
        assert ("settled" in early) == bool(early["cut"])
        if early["cut"]:
            settled = early["settled"]
            assert settled["error"] is None and settled["as_full"] is True
            assert settled["similarity"] == record["similarity"]
            for t, v in settled["per_T"].items():
                assert v["outliers"] == record["per_T"][t]["outliers"]
                assert v["chosen"] == early["per_T"][t]["chosen"]
    assert any("settled" in r["early"] for r in records)
    assert json.loads((run / "config.json").read_text())["decide_after"] == 4
    summary = json.loads((run / "summary.json").read_text())
    de = summary["decided_early"]
    assert (de["after"], de["prompts"], de["errors"]) == (4, 2, 0)
    assert de["every_row"]["flag_vs_failure"] == summary["flag_vs_failure"]
    # every settled verdict on the run's completions: the defect log's figures are the whole run's
    assert de["unsettled"] == 0 and de["settled_as_full"]["different"] == 0
    assert de["settled"]["flag_vs_failure"] == de["every_row"]["flag_vs_failure"]
    assert de["settled"]["outliers_per_T"] == de["every_row"]["outliers_per_T"]
    assert de["settled"]["pass_at_1_repaired"] == de["early"]["pass_at_1_repaired"]
    html = (run / "report.html").read_text()
    assert "Deciding after 4 tokens" in html and "F1, settled (the defect log&#x27;s verdict)" in html


def test_failed_prompts_are_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    """A backend failure (the rules backend told to fail) and an unexpected exception (a fault no
    real backend can be made to raise on cue, hence the small subclass) each cost one prompt only."""
    import asyncio

    from cctest.bench.datasets import load_dataset
    from cctest.bench.runner import RunConfig, run_benchmark

    class Buggy(RuleBackend):
        async def complete(self, prompts, *, suffixes=None):  # type: ignore[no-untyped-def]
            if any("greet" in p for p in prompts):
                raise RuntimeError("a bug")
            return await super().complete(prompts, suffixes=suffixes)

    tasks = list(load_dataset(str(DATA / "tasks.jsonl")).tasks)
    settings = Settings(backend="rules", mutants=2)
    config = RunConfig(
        dataset="tasks", dataset_source="", tasks=3, thresholds=[1.0], limit=None, shuffle=False,
        settings=settings,
    )  # fmt: skip
    store: RunStore[dict[str, Any]] = RunStore(tmp_path)
    store.prepare(config, resume=False)
    records = asyncio.run(
        run_benchmark(
            tasks,
            settings,
            config,
            store,
            backend_factory=lambda s: Buggy(fail_on=("mul",)),
            progress=False,
        )
    )
    by_id = {r["task_id"]: r for r in records}
    assert by_id["add"]["error"] is None and by_id["add"]["tests"][0]["outcome"] == "passed"
    assert "told to fail" in by_id["mul"]["error"]
    assert by_id["line-4"]["error"] == "RuntimeError: a bug"
    assert sorted(r["task_id"] for r in RunStore(tmp_path).records()) == ["add", "line-4", "mul"]
    assert [r["task_id"] for r in load_run(tmp_path)[1]] == ["add", "mul", "line-4"]


def test_batches_group_prompts_of_similar_length() -> None:
    from cctest.bench.runner import batches

    tasks = list(enumerate(load_humaneval().tasks[:20]))
    groups = batches(tasks, 8)
    assert [len(g) for g in groups] == [8, 8, 4]
    flat = [item for g in groups for item in g]
    assert sorted(i for i, _ in flat) == list(range(20))  # every task once
    lengths = [len(t.prompt) for _, t in flat]
    assert lengths == sorted(lengths)  # shortest first, so a group pads little
    assert batches(tasks, 1) == [[item] for item in flat] and batches([], 4) == []


def test_report_examples_come_from_the_threshold_that_flags_the_most(tmp_path: Path) -> None:
    """Five thresholds, the original flagged only at the lowest: the examples are shown there, not
    at the middle T where nothing was flagged."""
    from cctest.bench.completion import examples_threshold
    from cctest.bench.metrics import summarize
    from cctest.bench.report import write_report

    run = tmp_path / "run"
    common = ["--dataset", str(DATA / "tasks.jsonl"), "--backend", "rules", "-k", "4", "--no-progress"]
    assert main(["bench", *common, "--scheme", "rep_r", "--out", str(run)]) == 0
    config, records = load_run(run)
    assert config["schemes"] == ["REP_R"]  # named as the registry spells it
    assert [t for t in records[0]["per_T"]] == ["1", "3", "5", "7", "9"]
    records[0]["per_T"]["1"]["outliers"] = [0]  # the original flagged at T=1 only
    summary = summarize(records, config["thresholds"])
    assert summary["original_flagged_per_T"] == {"1": 1, "3": 0, "5": 0, "7": 0, "9": 0}
    assert examples_threshold(summary) == "1"
    html = write_report(run, config, summary, records).read_text()
    assert "Examples: original completion flagged at T=1" in html
    assert f"<h3>{records[0]['task_id']}</h3>" in html and "No original completion was flagged" not in html
