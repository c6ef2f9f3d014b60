"""The run directory under hostile and unlucky conditions, for every kind of run (the machinery is
shared): two runs on one --out, damaged config.json and records, an --out that cannot be a
directory, a read-only mount, a full disk, symlinks planted in the directory, run names matplotlib
would read as mathtext, and endless lines in a JSONL file.

Each case is one sentence on stderr and exit status 2, and nothing already written is lost. The
cases that could hang or fill memory run as a subprocess under a timeout and an address-space
limit; the full disk is a real one (a small tmpfs in a private mount namespace).
"""

from __future__ import annotations

import gzip
import json
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cctest.errors import DatasetError
from cctest.userfile import read_user_lines, read_user_text

CCTEST = Path(sys.executable).parent / "cctest"
RULES = ["--backend", "rules", "-k", "2", "--no-progress"]


def _dataset(path: Path, n: int, pad: int = 0, tests: str | None = None) -> Path:
    """A JSONL dataset of ``n`` tasks the rules backend answers (``pad`` bytes of comment each)."""
    lines = []
    for i in range(n):
        task = {
            "task_id": f"t{i}",
            "prompt": ("# " + "x" * pad + "\n" if pad else "")
            + f'def f{i}(a, b):\n    """Return the sum of a and b."""\n',
            "ground_truth": "    return a + b\n",
        }
        if tests:
            task |= {"tests": tests, "entry_point": f"f{i}"}
        lines.append(json.dumps(task))
    path.write_text("\n".join(lines) + "\n")
    return path


def _cctest(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``cctest ARGS`` in a subprocess, with at most 2 GiB of address space (a runaway read hits it)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [str(CCTEST), *args], capture_output=True, text=True, timeout=timeout, preexec_fn=limit
    )


def _one_sentence(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cctest: ") and lines[0].endswith("."), stderr
    return lines[0]


def _ids(run: Path) -> list[str]:
    return [json.loads(line)["task_id"] for line in (run / "results.jsonl").read_text().splitlines() if line]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of 4 tasks (made once; each test works on a copy)."""
    base = tmp_path_factory.mktemp("finished")
    data = _dataset(base / "data.jsonl", 4)
    r = _cctest("bench", "--dataset", str(data), *RULES, "--out", str(base / "run"))
    assert r.returncode == 0, r.stderr
    return base / "run"


@pytest.fixture
def run(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    return copy


def _resume(run: Path) -> list[str]:
    data = json.loads((run / "config.json").read_text())["dataset"]
    return ["bench", "--dataset", data, *RULES, "--out", str(run), "--resume"]


# ------------------------------------------------------------------ one run at a time


def test_a_second_run_on_one_out_is_refused_while_the_first_writes_it(tmp_path: Path) -> None:
    # each task's test sleeps, so the first run lasts seconds after it has taken the directory
    data = _dataset(tmp_path / "slow.jsonl", 3, tests="def check(f):\n    import time\n    time.sleep(3)\n")
    out = tmp_path / "run"
    args = ["bench", "--dataset", str(data), *RULES, "--workers", "1", "--out", str(out)]
    first = subprocess.Popen([str(CCTEST), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        lock = out / "run.lock"
        while first.poll() is None and not (lock.exists() and lock.read_text().strip() == str(first.pid)):
            time.sleep(0.05)
        second = _cctest(*args, "--resume")
        assert first.poll() is None, "the first run ended before the second started"
        assert second.returncode == 2
        assert f"{out} is being written by another run (pid {first.pid})" in _one_sentence(second.stderr)
        # the lock dies with its run: a kill leaves the directory free for --resume
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait()
    third = _cctest(*args, "--resume")
    assert third.returncode == 0, third.stderr
    assert sorted(_ids(out)) == ["t0", "t1", "t2"]


def test_duplicate_records_are_ignored_with_a_warning(run: Path) -> None:
    """Two runs of an older version at once left a task twice: the first record counts."""
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    doubled = json.loads(lines[0])
    doubled["completions"] = []  # a different record of the same task: must not count
    with open(run / "results.jsonl", "a") as f:
        f.write(json.dumps(doubled) + "\n" + lines[1])
    for args in (["bench", "report", str(run)], _resume(run)):
        r = _cctest(*args)
        assert r.returncode == 0, r.stderr
        assert "holds 2 more record(s) of tasks already recorded" in r.stderr
        assert "the first record of each task is used" in r.stderr
        assert json.loads((run / "summary.json").read_text())["counts"]["prompts"] == 4
    r = _cctest("bench", "compare", str(run), str(run), "--out", str(run.parent))
    assert r.returncode == 0 and "more record(s)" in r.stderr


# ------------------------------------------------------------------ damaged run directories


@pytest.mark.parametrize(
    ("config", "says"),
    [("{not json", "is not valid JSON"), ("[1, 2]", "is not a JSON object, as a run's config.json is")],
)
def test_a_damaged_config_json_is_one_sentence(run: Path, config: str, says: str) -> None:
    records = (run / "results.jsonl").read_bytes()
    resume = _resume(run)
    (run / "config.json").write_text(config)
    for args in (["bench", "report", str(run)], resume):
        r = _cctest(*args)
        assert r.returncode == 2 and says in _one_sentence(r.stderr)
    assert (run / "results.jsonl").read_bytes() == records


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("[1, 2]", "line 5 is not a record of a run (it is not a JSON object)"),
        ('{"index": 9}', "line 5 is not a record of a run (it has no 'task_id' string)"),
        ('{"task_id": "x", "index": "9"}', "its 'index' is not a whole number"),
        ('{"task_id": "x", "index": 9, "completions": 5}', "holds records of another shape than its run"),
        ('{"task_id": "x", "index": 9, "completions": [1], "per_T": []}', "of another shape"),
    ],
)
def test_records_of_the_wrong_shape_are_one_sentence(run: Path, line: str, says: str) -> None:
    with open(run / "results.jsonl", "a") as f:
        f.write(line + "\n")
    records = (run / "results.jsonl").read_bytes()
    for args in (["bench", "report", str(run)], _resume(run)):
        r = _cctest(*args)
        assert r.returncode == 2 and says in _one_sentence(r.stderr)
    assert (run / "results.jsonl").read_bytes() == records


def test_an_out_that_cannot_be_a_directory(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "d.jsonl", 1)
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    for out, says in (
        (afile, f"{afile} exists and is not a directory"),
        (afile / "run", f"{afile / 'run'} is under {afile}, which is not a directory"),
    ):
        r = _cctest("bench", "--dataset", str(data), *RULES, "--out", str(out))
        assert r.returncode == 2 and says in _one_sentence(r.stderr)
        r = _cctest("bench", "--dataset", str(data), *RULES, "--out", str(out), "--resume")
        assert r.returncode == 2 and "there is no run to resume" in _one_sentence(r.stderr)
    assert afile.read_text() == "mine\n"


_UNSHARE = ["unshare", "-m", "--propagation", "private"]


def _in_private_mounts(script: str, *args: str, timeout: float = 300) -> dict[str, Any]:
    """``script`` (Python, run as root in a mount namespace of its own: its mounts vanish with it);
    it prints one JSON object, returned. Skipped where the kernel refuses the namespace."""
    r = subprocess.run(
        [*_UNSHARE, sys.executable, "-c", script, str(CCTEST), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if r.returncode != 0 and "unshare" in r.stderr:
        pytest.skip(f"the kernel refuses a private mount namespace here ({r.stderr.strip()})")
    assert r.returncode == 0, r.stderr
    result: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return result


_RUN = r"""
import json, os, subprocess, sys
cctest = sys.argv[1]

def run(*args):
    r = subprocess.run([cctest, *args], capture_output=True, text=True, timeout=120)
    return [r.returncode, r.stderr]
"""

_READ_ONLY = (
    _RUN
    + r"""
run_dir, data = sys.argv[2:4]
subprocess.run(["mount", "--bind", run_dir, run_dir], check=True)
subprocess.run(["mount", "-o", "remount,ro,bind", run_dir], check=True)
common = ["--dataset", data, "--backend", "rules", "-k", "2", "--no-progress"]
print(json.dumps({
    "resume": run("bench", *common, "--out", run_dir, "--resume"),
    "report": run("bench", "report", run_dir),
    "new": run("bench", *common, "--out", os.path.join(run_dir, "new")),
}))
"""
)


def test_a_run_directory_on_a_read_only_mount(run: Path) -> None:
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    data = json.loads((run / "config.json").read_text())["dataset"]
    out = _in_private_mounts(_READ_ONLY, str(run), data)
    for name, says in (
        ("resume", "cannot be written (the file system is read-only); the records already written are kept"),
        ("report", "summary.json cannot be written (the file system is read-only)"),
        ("new", "cannot be written (the file system is read-only)"),
    ):
        rc, stderr = out[name]
        assert rc == 2 and says in _one_sentence(stderr), name
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


_FULL_DISK = (
    _RUN
    + r"""
mnt, data = sys.argv[2:4]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], check=True)
# fill the disk but for 40 KiB: room for the run's config and a few of its records
reserve = os.path.join(mnt, "reserve")
with open(reserve, "wb") as f:
    f.write(b"r" * 40960)
fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT)
try:
    while True:
        os.write(fd, b"\0" * 4096)
except OSError:
    pass
os.close(fd)
os.unlink(reserve)
out = os.path.join(mnt, "run")
args = ["bench", "--dataset", data, "--backend", "rules", "-k", "2", "--no-progress", "--out", out]

def ids():
    with open(os.path.join(out, "results.jsonl")) as f:
        return [json.loads(line)["task_id"] for line in f]

first = run(*args)
after_first = ids()
still_full = run(*args, "--resume")
after_still_full = ids()
os.unlink(os.path.join(mnt, "filler"))
freed = run(*args, "--resume")
with open(os.path.join(out, "summary.json")) as f:
    prompts = json.load(f)["counts"]["prompts"]
print(json.dumps({"first": first, "after_first": after_first, "still_full": still_full,
                  "after_still_full": after_still_full, "freed": freed, "after_freed": ids(),
                  "prompts": prompts}))
"""
)


def test_a_full_disk_keeps_the_records_and_resume_completes_once_space_is_freed(tmp_path: Path) -> None:
    data = _dataset(tmp_path / "big.jsonl", 12, pad=6000)  # about 6 KiB a record: a few fit
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    out = _in_private_mounts(_FULL_DISK, str(mnt), str(data))
    run = mnt / "run"
    for name in ("first", "still_full"):
        rc, stderr = out[name]
        assert rc == 2, stderr
        # a resume says how far the run got, then the one sentence of its error
        sentence = _one_sentence("\n".join(x for x in stderr.splitlines() if " resuming " not in x))
        assert f"{run / 'results.jsonl'} cannot be written (the disk is full)" in sentence
        assert "the records already written are kept: continue with the same command and " in sentence
        assert sentence.endswith(f"--resume --out {run} once it can be written.")
    first, still = out["after_first"], out["after_still_full"]
    assert 1 <= len(first) < 12 and still[: len(first)] == first  # nothing lost, no torn line
    rc, stderr = out["freed"]
    assert rc == 0, stderr
    assert sorted(out["after_freed"]) == sorted(f"t{i}" for i in range(12))
    assert out["prompts"] == 12


# ------------------------------------------------------------------ reports


def test_compare_runs_whose_names_read_as_mathtext(finished: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "$x^$", tmp_path / r"$\frac{1}$"
    shutil.copytree(finished, a)
    shutil.copytree(finished, b)
    r = _cctest("bench", "compare", str(a), str(b), "--out", str(tmp_path / "cmp"))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "cmp" / "compare.html").read_text()
    assert "$x^$ vs $\\frac{1}$" in page and page.count("<svg") >= 3


def test_report_files_are_never_written_through_a_planted_symlink(run: Path, tmp_path: Path) -> None:
    victims = {}
    for name in ("report.html", "summary.json", "compare.html"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious\n")
        (run / name).unlink(missing_ok=True)
        (run / name).symlink_to(victim)
        victims[name] = victim
    # the temporary file of the former atomic write, planted too
    (run / "summary.json.tmp").symlink_to(victims["summary.json"])
    assert _cctest("bench", "report", str(run)).returncode == 0
    assert _cctest("bench", "compare", str(run), str(run), "--out", str(run)).returncode == 0
    for name, victim in victims.items():
        assert victim.read_text() == "precious\n", name
        assert not (run / name).is_symlink() and (run / name).stat().st_size > 100, name
    assert json.loads((run / "summary.json").read_text())["counts"]["prompts"] == 4
    assert not [p.name for p in run.iterdir() if p.name.startswith(".")]  # no temporary file left


# ------------------------------------------------------------------ endless lines


def test_an_endless_line_is_refused_with_bounded_memory(run: Path, tmp_path: Path) -> None:
    """All-NUL sparse files (no disk cost): a dataset and a task file of 400 MB, records of 4 GB;
    each refused after its first line's bound, within 2 GiB of address space."""
    nul = tmp_path / "nul.jsonl"
    with open(nul, "wb") as f:
        f.truncate(400 << 20)
    r = _cctest("bench", "--dataset", str(nul), *RULES, "--out", str(tmp_path / "r1"))
    assert r.returncode == 2
    assert "line 1 is longer than 64 MiB, the limit for a line of a dataset file" in _one_sentence(r.stderr)
    # the tasks suite asks no mutants: -k is not among its options
    tasks_args = ["--backend", "rules", "--no-progress"]
    r = _cctest("bench", "tasks", "--tasks", str(nul), *tasks_args, "--out", str(tmp_path / "r2"))
    assert r.returncode == 2
    assert "line 1 is longer than 64 MiB, the limit for a line of a task file" in _one_sentence(r.stderr)
    with open(run / "results.jsonl", "ab") as f:
        f.truncate(4 << 30)  # after the records: one endless last line
    size = (run / "results.jsonl").stat().st_size
    for args in (["bench", "report", str(run)], _resume(run)):
        r = _cctest(*args)
        assert r.returncode == 2
        assert "line 5 is longer than 256 MiB, the limit for a line of a run's results.jsonl" in (
            _one_sentence(r.stderr)
        )
    assert (run / "results.jsonl").stat().st_size == size  # not taken for a torn line and cut off


def test_lines_are_numbered_and_split_as_the_whole_text_is(tmp_path: Path) -> None:
    raw = "\ufeff{}\r\n\r\n{ }\r{}\n\n[]".encode()
    path = tmp_path / "x.jsonl"
    path.write_bytes(raw)
    whole = [(i, line) for i, line in enumerate(read_user_text(path).split("\n"), start=1) if line]
    assert [(i, line) for i, line in read_user_lines(path) if line] == whole
    packed = tmp_path / "x.jsonl.gz"
    packed.write_bytes(gzip.compress(raw))
    assert [(i, line) for i, line in read_user_lines(packed) if line] == whole
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"{}\n\xff\n")
    with pytest.raises(DatasetError, match=r"is not valid UTF-8 \(byte 3\)"):
        list(read_user_lines(bad, error=DatasetError))
    # a gzip file that unpacks to more than the limit, line by line
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"{}\n" * 100_000))
    with pytest.raises(DatasetError, match="unpacks to more than 1000 bytes"):
        list(read_user_lines(bomb, limit=1000, error=DatasetError))
