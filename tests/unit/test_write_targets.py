"""Every path cctest writes refuses a special file: one check (``userfile.check_write_target``) on
each writer.

A file cctest writes is made whole in a temporary file and renamed over its path, and a rename
replaces whatever is there: a device or a named pipe at ``bench export --out`` became a regular
file (as root, ``--out /dev/null`` replaced the system's ``/dev/null``). Each writer here is given
a named pipe and a character device it made itself in ``tmp_path`` (the device as root only: the
null device's numbers, never the system's node), and each must refuse with one sentence, exit 2,
and leave the node as it was. ``bench export --out`` naming a file of a run directory is refused
too: it would overwrite the run.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cctest.bench.store import RunStore, write_file
from cctest.cli import main
from cctest.defects import DefectStore
from cctest.errors import ConfigError, DefectLogError
from cctest.suites.operational import AnswerCache
from cctest.userfile import check_write_target

ROOT = Path(__file__).resolve().parents[2]
CCTEST = Path(sys.executable).parent / "cctest"
RULES = ["--backend", "rules", "-k", "2", "--no-progress"]
KINDS = ["fifo", "chardev"]


def _node(path: Path, kind: str) -> Path:
    """A special file of ``kind`` at ``path``, made by this test (a character device: root only)."""
    if kind == "fifo":
        os.mkfifo(path, 0o644)
    else:
        if os.geteuid() != 0:
            pytest.skip("making a character device needs root")
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return path


def _intact(path: Path, kind: str) -> bool:
    st = os.lstat(path)
    if kind == "fifo":
        return stat.S_ISFIFO(st.st_mode)
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)


def _one_sentence(err: str, prefix: str = "cctest: ") -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix) and lines[0].endswith("."), err
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished completion run of 2 tasks (made once; each test works on a copy)."""
    base = tmp_path_factory.mktemp("finished")
    data = base / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {"task_id": f"t{i}", "prompt": f"def f{i}(a, b):\n", "ground_truth": "    return a + b\n"}
            )
            + "\n"
            for i in range(2)
        )
    )
    assert main(["bench", "--dataset", str(data), *RULES, "--out", str(base / "run")]) == 0
    return base / "run"


@pytest.fixture
def run(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    return copy


def _files(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}


@pytest.mark.parametrize("kind", KINDS)
def test_bench_export_out_refuses_a_special_file(
    run: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    node = _node(tmp_path / "samples.jsonl", kind)
    assert main(["bench", "export", str(run), "--format", "humaneval", "--out", str(node)]) == 2
    sentence = _one_sentence(capsys.readouterr().err)
    assert (
        f"cannot write the export {node}: it is not a regular file (a device, a pipe or a socket)" in sentence
    )
    assert _intact(node, kind)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("name", ["results.jsonl", "config.json", "summary.json", "report.html", "run.lock"])
def test_bench_export_out_refuses_a_file_of_a_run_directory(
    run: Path, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _files(run)
    for out in (run / name, tmp_path / "elsewhere" / ".." / "run" / name):
        (tmp_path / "elsewhere").mkdir(exist_ok=True)
        assert main(["bench", "export", str(run), "--format", "evalplus", "--out", str(out)]) == 2
        sentence = _one_sentence(capsys.readouterr().err)
        assert f"--out {out} is a file of a run directory, which export would overwrite" in sentence
    assert _files(run) == before
    # a file of its own beside the run's is written
    assert (
        main(["bench", "export", str(run), "--format", "evalplus", "--out", str(run / "samples.jsonl")]) == 0
    )
    assert len((run / "samples.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("out", ["", "  "])
def test_bench_export_out_without_a_name_is_refused(
    run: Path, out: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty ``--out`` (a variable that expanded to nothing) is refused, not read as "no
    --out": the samples meant for a file would otherwise go to standard output without a word."""
    assert main(["bench", "export", str(run), "--format", "humaneval", "--out", out]) == 2
    captured = capsys.readouterr()
    assert "--out needs a file name" in _one_sentence(captured.err)
    assert captured.out == ""


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["summary.json", "report.html"])
def test_bench_report_refuses_a_special_file_among_the_run_files(
    run: Path, kind: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / name).unlink()
    node = _node(run / name, kind)
    assert main(["bench", "report", str(run)]) == 2
    assert "is not a regular file" in _one_sentence(capsys.readouterr().err)
    assert _intact(node, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_bench_compare_refuses_a_special_file_as_compare_html(
    run: Path, tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp"
    out.mkdir()
    node = _node(out / "compare.html", kind)
    assert main(["bench", "compare", str(run), str(run), "--out", str(out)]) == 2
    assert "is not a regular file" in _one_sentence(capsys.readouterr().err)
    assert _intact(node, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_directory_s_records_and_lock_refuse_a_special_file(run: Path, kind: str) -> None:
    """The records are appended in place and the lock opened in place: a device would swallow the
    records, a pipe would wait for a reader."""
    store: RunStore[dict[str, str]] = RunStore(run)
    (run / "results.jsonl").unlink()
    node = _node(run / "results.jsonl", kind)
    with pytest.raises(ConfigError, match="results.jsonl: it is not a regular file"):
        store.append({"task_id": "x"})
    assert _intact(node, kind)
    (run / "run.lock").unlink(missing_ok=True)
    lock = _node(run / "run.lock", kind)
    with pytest.raises(ConfigError, match="run.lock: it is not a regular file"), store.locked(create=False):
        pass
    assert _intact(lock, kind)


def test_write_file_refuses_a_socket_and_a_directory(tmp_path: Path) -> None:
    sock_path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        with pytest.raises(ConfigError, match="it is not a regular file"):
            write_file(sock_path, "x")
        assert stat.S_ISSOCK(sock_path.lstat().st_mode)
    (tmp_path / "d").mkdir()
    with pytest.raises(ConfigError, match="it is a directory"):
        write_file(tmp_path / "d", "x")
    check_write_target(tmp_path / "missing")  # nothing there: fine


@pytest.mark.parametrize("kind", KINDS)
def test_the_defect_log_and_its_export_refuse_a_special_file(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    node = _node(tmp_path / "node", kind)
    with pytest.raises(DefectLogError, match="is not a regular file"):
        DefectStore(node)
    db = tmp_path / "defects.sqlite3"
    DefectStore(db).close()
    assert main(["defects", "--db", str(db), "export", "--output", str(node)]) == 2
    assert f"cannot export to {node}: it is not a regular file" in _one_sentence(capsys.readouterr().err)
    assert _intact(node, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_the_answer_cache_refuses_a_special_file(tmp_path: Path, kind: str) -> None:
    node = _node(tmp_path / "answers.sqlite", kind)
    with pytest.raises(ConfigError, match="is not a regular file"):
        AnswerCache(node)
    assert _intact(node, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_the_proxy_refuses_a_special_file_as_its_defect_log_before_it_listens(
    tmp_path: Path, kind: str
) -> None:
    node = _node(tmp_path / "defects.sqlite3", kind)
    r = subprocess.run(
        [str(CCTEST), "proxy", "--upstream", "http://127.0.0.1:9", "--port", "0", "--defect-log", str(node)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert r.returncode == 2
    assert f"cannot write the defect log {node}: it is not a regular file" in _one_sentence(r.stderr)
    assert _intact(node, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_the_language_server_refuses_a_special_file_as_its_log_file(tmp_path: Path, kind: str) -> None:
    """Appending to a named pipe waited for a reader before the server started."""
    node = _node(tmp_path / "lsp.log", kind)
    r = subprocess.run(
        [sys.executable, "-m", "lsp_server", "--log-file", str(node)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 2
    sentence = _one_sentence(r.stderr, "cctest-lsp: ")
    assert f"cannot write the log file {node}: it is not a regular file" in sentence
    assert _intact(node, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_gguf_output_refuses_a_special_file(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m cctest.models.gguf -o OUT`` renames the converted file over OUT: refused before
    the converter runs."""
    from cctest.models import gguf

    node = _node(tmp_path / "model.gguf", kind)
    assert gguf.main(["-o", str(node)]) == 2
    line = _one_sentence(capsys.readouterr().err, prefix="cannot write the GGUF file")
    assert str(node) in line
    assert _intact(node, kind)
    assert not (tmp_path / "model.gguf.partial").exists()
