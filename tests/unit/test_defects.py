"""The defect log: records round-trip, file mode, filters, acceptance, export, the CLI, and crash safety."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_cli_hostile_input import _bounded, _one_sentence

from cctest.defects import DefectStore, normalise_time, safe_settings
from cctest.errors import DefectLogError
from cctest.types import Completion, EngineResult, Mutant, Prompt, Verdict

ROOT = Path(__file__).resolve().parents[2]


def make_result(prompt: str = "def add(a, b):\n", suspect: bool = True, tag: str = "") -> EngineResult:
    """An engine result built by hand: the original completion is an outlier among three."""
    original = "    return a * 2  # fragile\n" if suspect else "    return a + b\n"
    comps = (
        Completion("original", original, original),
        Completion("mutant:1:rename", "    return x + b\n", "    return a + b\n"),
        Completion("mutant:2:rename", "    return a + y\n", "    return a + b\n"),
    )
    outliers = (0,) if suspect else ()
    return EngineResult(
        prompt=Prompt(text=prompt + tag, suffix="\nprint(add(1, 2))\n", line=2, col=1),
        mutants=(
            Mutant("rename", "def add(x, b):\n", {"x": "a"}),
            Mutant("rename", "def add(a, y):\n", {"y": "b"}),
        ),
        dropped_mutants=(),
        completions=comps,
        similarity=((1.0, 0.6, 0.6), (0.6, 1.0, 1.0), (0.6, 1.0, 1.0)),
        verdict=Verdict(
            outliers=outliers,
            chosen=1,
            no_results=(),
            counts=(2, 0, 0) if suspect else (0, 0, 0),
            threshold=1.6,
        ),
        timings_ms={"mutate": 1.0, "complete": 5.0, "total": 7.0, "engine": 2.0},
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sub" / "dir" / "defects.sqlite3"


def test_an_existing_log_readable_by_others_is_made_private(tmp_path: Path) -> None:
    """A log made 0644 (by an older cctest, or a copy) is tightened to 0600, SQLite's WAL beside it too,
    whether the server opens it to write or the CLI to read."""
    db = tmp_path / "defects.sqlite3"
    with DefectStore(db) as store:
        store.add(make_result(), request_id="old", uri="file:///a.py", line=1, col=0, model="rules")
    for create in (True, False):
        os.chmod(db, 0o644)
        wal = db.with_name(db.name + "-wal")
        wal.touch()
        os.chmod(wal, 0o664)
        with DefectStore(db, create=create) as store:
            assert store.get_by_request("old") is not None
            assert stat.S_IMODE(db.stat().st_mode) == 0o600
            assert stat.S_IMODE(wal.stat().st_mode) == 0o600


def test_only_the_missing_directories_are_made_and_private(tmp_path: Path) -> None:
    """~/.cache/cctest/defects.sqlite3 on a fresh account: .cache and cctest are both 0700; a
    directory that already exists keeps its mode."""
    existing = tmp_path / "home"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    db = existing / ".cache" / "cctest" / "defects.sqlite3"
    old_umask = os.umask(0o022)
    try:
        DefectStore(db).close()
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((existing / ".cache").stat().st_mode) == 0o700
    assert stat.S_IMODE((existing / ".cache" / "cctest").stat().st_mode) == 0o700
    assert stat.S_IMODE(existing.stat().st_mode) == 0o755
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


REFUSE_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
from cctest.defects import DefectStore
from cctest.errors import DefectLogError
try:
    DefectStore(sys.argv[2], create=False)
except DefectLogError as exc:
    print(exc)
"""


def test_a_log_of_someone_else_readable_by_all_is_refused(
    as_nobody: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    """Another user's log that others may read cannot be tightened: one clear sentence, no opening."""
    shared = Path(tempfile.mkdtemp(prefix="cctest-test-log-"))  # not under pytest's 0700 directory
    try:
        os.chmod(shared, 0o755)
        db = shared / "defects.sqlite3"
        DefectStore(db).close()
        os.chmod(db, 0o644)
        proc = as_nobody(REFUSE_SCRIPT, str(ROOT), str(db))
    finally:
        shutil.rmtree(shared)
    assert proc.returncode == 0, proc.stderr
    assert "can be read by other users (mode 0644)" in proc.stdout and "chmod 600" in proc.stdout


# -- paths that are not cctest's own regular file: refused, and nothing about them changes -----------


def _loose(path: Path, data: bytes | None = None) -> tuple[int, bytes]:
    """Make ``path`` (with ``data``) readable by all; its mode and bytes, to compare afterwards."""
    if data is not None:
        path.write_bytes(data)
    os.chmod(path, 0o644)
    return stat.S_IMODE(path.stat().st_mode), path.read_bytes()


def _untouched(path: Path) -> tuple[int, bytes]:
    return stat.S_IMODE(path.stat().st_mode), path.read_bytes()


def _refused_by_every_command(db: Path, tmp_path: Path) -> list[str]:
    """``list``, ``show``, ``export`` (to stdout and to a file) on ``db``: exit 2 and one sentence
    each, no export written; the sentences."""
    out = tmp_path / "export.jsonl"
    sentences = []
    for args in (["list"], ["show", "1"], ["export"], ["export", "--output", str(out)]):
        r = _bounded("defects", "--db", str(db), *args)
        assert (r.returncode, r.stdout) == (2, ""), (args, r.stderr)
        sentences.append(_one_sentence(r.stderr))
    assert not out.exists()
    return sentences


def test_a_symbolic_link_is_refused_and_what_it_names_is_untouched(tmp_path: Path) -> None:
    """A link to a file readable by all (here a text file, and a real defect log) is neither followed
    nor chmodded, by the read-only commands or by the server opening it to write; a dangling one is
    refused too, not created through."""
    text = tmp_path / "passwd"
    log = tmp_path / "real.sqlite3"
    DefectStore(log).close()
    for target, data in ((text, b"root:x:0:0:root:/root:/bin/bash\n"), (log, None)):
        before = _loose(target, data)
        link = tmp_path / f"link-to-{target.name}"
        link.symlink_to(target)
        for sentence in _refused_by_every_command(link, tmp_path):
            assert f"{link} is a symbolic link" in sentence
        with pytest.raises(DefectLogError, match="is a symbolic link"):
            DefectStore(link)
        assert _untouched(target) == before and link.is_symlink()
    dangling = tmp_path / "dangling.sqlite3"
    dangling.symlink_to(tmp_path / "nowhere.sqlite3")
    assert "is a symbolic link" in _refused_by_every_command(dangling, tmp_path)[0]
    with pytest.raises(DefectLogError, match="is a symbolic link"):
        DefectStore(dangling)
    assert not (tmp_path / "nowhere.sqlite3").exists()


def test_a_link_beside_the_log_is_refused(tmp_path: Path) -> None:
    """SQLite's -wal file beside a real log made a link to another file: refused, that file untouched."""
    db = tmp_path / "defects.sqlite3"
    DefectStore(db).close()
    other = tmp_path / "other.txt"
    before = _loose(other, b"not yours\n")
    db.with_name(db.name + "-wal").symlink_to(other)
    for create in (True, False):
        with pytest.raises(DefectLogError, match="-wal is a symbolic link"):
            DefectStore(db, create=create)
    assert _untouched(other) == before


def test_a_named_pipe_is_refused_without_waiting(tmp_path: Path) -> None:
    """Opening a fifo would wait for a writer: it is refused from its status, by the CLI and by the
    server's store (in a subprocess under a timeout, should it wait after all)."""
    fifo = tmp_path / "defects.sqlite3"
    os.mkfifo(fifo, 0o644)
    for sentence in _refused_by_every_command(fifo, tmp_path):
        assert "is not a regular file" in sentence
    script = "import sys; from cctest.defects import DefectStore; DefectStore(sys.argv[1])"
    r = subprocess.run(
        [sys.executable, "-c", script, str(fifo)], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert r.returncode == 1 and "DefectLogError" in r.stderr and "is not a regular file" in r.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and stat.S_IMODE(fifo.lstat().st_mode) == 0o644


def test_a_file_that_is_not_a_defect_log_is_refused_unchanged(tmp_path: Path) -> None:
    """A text file, and an SQLite database of something else, readable by all: the read-only
    commands and the server's store refuse them with their mode and bytes as they were (the store
    does not add its tables to another program's database); nothing is left beside them."""
    text = tmp_path / "notes.sqlite3"
    other = tmp_path / "app.sqlite3"
    with contextlib.closing(sqlite3.connect(other)) as con:
        con.execute("CREATE TABLE x (y)")
        con.commit()
    for path, data in ((text, b"a shopping list, not a database\n"), (other, None)):
        before = _loose(path, data)
        for sentence in _refused_by_every_command(path, tmp_path):
            assert f"{path} is not a cctest defect log" in sentence
        for create in (True, False):
            with pytest.raises(DefectLogError, match="is not a cctest defect log"):
                DefectStore(path, create=create)
        assert _untouched(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite3", "notes.sqlite3"]


def test_the_cli_still_makes_a_real_log_private(tmp_path: Path) -> None:
    db = tmp_path / "defects.sqlite3"
    with DefectStore(db) as store:
        store.add(make_result())
    os.chmod(db, 0o644)
    r = _bounded("defects", "--db", str(db), "list")
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_a_directory_made_for_the_log_is_chmodded_but_not_one_it_found(tmp_path: Path) -> None:
    """The parent the store makes is 0700; one that exists (made by another program, or a link to
    one) keeps its mode."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chmod(theirs, 0o755)
    (tmp_path / "linked").symlink_to(theirs)
    DefectStore(tmp_path / "linked" / "defects.sqlite3").close()
    assert stat.S_IMODE(theirs.stat().st_mode) == 0o755
    DefectStore(tmp_path / "linked" / "new" / "defects.sqlite3").close()
    assert stat.S_IMODE((theirs / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE(theirs.stat().st_mode) == 0o755


def test_a_path_with_a_nul_byte_or_an_unknown_home_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(DefectLogError, match="cannot use the defect log path"):
        DefectStore(str(tmp_path / "a\x00b.sqlite3"))
    nobody = "~no-such-user-cctest/defects.sqlite3"
    with pytest.raises(DefectLogError, match="names no user's home directory"):
        DefectStore(nobody)
    r = _bounded("defects", "--db", nobody, "list")
    assert r.returncode == 2 and "names no user's home directory" in _one_sentence(r.stderr)
    db = tmp_path / "defects.sqlite3"
    DefectStore(db).close()
    r = _bounded("defects", "--db", str(db), "export", "--output", "~no-such-user-cctest/out.jsonl")
    assert r.returncode == 2 and "the export path ~no-such-user-cctest" in _one_sentence(r.stderr)


def test_export_refuses_a_link_or_a_pipe_as_its_output(tmp_path: Path) -> None:
    """Exporting replaces the output file: a link (and what it names) or a fifo is refused as it is."""
    db = tmp_path / "defects.sqlite3"
    with DefectStore(db) as store:
        store.add(make_result())
    target = tmp_path / "target.txt"
    before = _loose(target, b"keep me\n")
    link = tmp_path / "out.jsonl"
    link.symlink_to(target)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    for out, problem in ((link, "is a symbolic link"), (fifo, "is not a regular file")):
        r = _bounded("defects", "--db", str(db), "export", "--output", str(out))
        assert r.returncode == 2 and f"cannot export to {out}: it {problem}" in _one_sentence(r.stderr)
    assert link.is_symlink() and stat.S_ISFIFO(fifo.lstat().st_mode) and _untouched(target) == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_round_trip_and_private_file(db: Path) -> None:
    with DefectStore(db) as store:
        rid = store.add(
            make_result(),
            request_id="req-1",
            uri="file:///a.py",
            line=1,
            col=0,
            mode="repair",
            model="rules",
            settings={"backend": "rules", "model": "http://u:secret@h:1/v1"},
        )
        rec = store.get(rid)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    assert rec is not None and rec.request_id == "req-1" and rec.uri == "file:///a.py"
    assert rec.outliers == [0] and rec.suspect and rec.chosen == 1
    assert (
        rec.original_completion.startswith("    return a * 2")
        and rec.chosen_completion == "    return a + b\n"
    )
    assert rec.repaired
    assert rec.completions[1]["raw"] == "    return x + b\n" and rec.mutants[0]["renames"] == {"x": "a"}
    assert rec.similarity[0] == [1.0, 0.6, 0.6]
    assert rec.settings["model"] == "http://h:1/v1"  # the password never reaches the file
    assert b"secret" not in db.read_bytes()
    assert rec.accepted is None
    # WAL mode, as the issue asks
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_existing_file_keeps_working_and_missing_file_is_an_error(db: Path) -> None:
    with pytest.raises(DefectLogError, match="no defect log"):
        DefectStore(db, create=False)
    assert not db.exists()  # reading never creates
    with DefectStore(db) as store:
        store.add(make_result())
    with DefectStore(db, create=False) as store:
        assert store.list()[1] == 1
    other = db.parent / "not-a-log.sqlite3"
    sqlite3.connect(other).execute("CREATE TABLE x (y)").connection.commit()
    with pytest.raises(DefectLogError, match="not a cctest defect log"):
        DefectStore(other, create=False)
    with pytest.raises(DefectLogError, match="directory"):
        DefectStore(db.parent)


def test_list_filters_and_paginates(db: Path) -> None:
    with DefectStore(db) as store:
        ids = [store.add(make_result(tag=f"# {i}\n"), uri=f"file:///{i % 2}.py") for i in range(7)]
        records, total = store.list(limit=3)
        assert total == 7 and [r.id for r in records] == ids[::-1][:3]  # newest first
        records, total = store.list(limit=3, offset=6)
        assert [r.id for r in records] == [ids[0]]
        records, total = store.list(uri="file:///1.py")
        assert total == 3 and all(r.uri == "file:///1.py" for r in records)
        assert store.list(since="2999-01-01T00:00:00Z")[1] == 0
        assert store.list(since="2000-01-01")[1] == 7
        with pytest.raises(DefectLogError, match="ISO 8601"):
            store.list(since="yesterday")


def test_acceptance_by_request_and_stats(db: Path) -> None:
    with DefectStore(db) as store:
        rid = store.add(make_result(), request_id="r1")
        assert store.mark_accepted("r1") == rid
        assert store.mark_accepted("r1") == rid  # twice: no change, no error
        # a served completion that was not recorded (not suspect): only the acceptances table
        assert store.mark_accepted("r2", uri="file:///b.py", suspect=False, repaired=False) is None
        rec = store.get(rid)
        assert rec is not None and rec.accepted is True and rec.accepted_time is not None
        s = store.stats()
        assert s == {
            "records": 1,
            "suspect_records": 1,
            "accepted_records": 1,
            "acceptances": 2,
            "acceptances_repaired": 1,
            "acceptances_suspect": 1,
        }
        assert store.clear() == 1
        assert store.stats()["records"] == 0 and store.stats()["acceptances"] == 0


def test_export_jsonl_and_csv(db: Path, tmp_path: Path) -> None:
    with DefectStore(db) as store:
        store.add(make_result(), request_id="a")
        store.add(make_result(suspect=False), request_id="b")
        buf = io.StringIO()
        assert store.export(buf, "jsonl") == 2
        lines = [json.loads(x) for x in buf.getvalue().splitlines()]
        assert [x["request_id"] for x in lines] == ["a", "b"] and lines[0]["outliers"] == [0]
        out = tmp_path / "d.csv"
        assert store.export_to(out, "csv") == 2
        rows = list(csv.DictReader(out.open(encoding="utf-8")))
        assert rows[1]["request_id"] == "b" and json.loads(rows[0]["similarity"])[0][0] == 1.0
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        with pytest.raises(DefectLogError, match="jsonl or csv"):
            store.export(buf, "xml")
        with pytest.raises(DefectLogError, match="not a directory"):
            store.export_to(tmp_path / "missing" / "x.jsonl")


def test_helpers() -> None:
    assert safe_settings({"model": "https://k:v@example.com/v1"})["model"] == "https://example.com/v1"
    assert safe_settings({"model": None}) == {"model": None}
    assert normalise_time("2026-03-01T10:00:00+02:00") == "2026-03-01T08:00:00.000000+00:00"


def _cctest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cctest", "defects", *args], capture_output=True, text=True, cwd=ROOT
    )


def test_cli_list_show_export(db: Path, tmp_path: Path) -> None:
    with DefectStore(db) as store:
        rid = store.add(make_result(), request_id="cli-1", uri="file:///w/a.py", line=1, col=0, model="rules")
    r = _cctest("--db", str(db), "list")
    assert r.returncode == 0, r.stderr
    assert f"{rid:>6}" in r.stdout and "file:///w/a.py:2:1" in r.stdout and "1/3 outliers" in r.stdout
    r = _cctest("show", str(rid), "--db", str(db))
    assert r.returncode == 0 and "return a * 2" in r.stdout and "*" in r.stdout
    r = _cctest("--db", str(db), "show", str(rid), "--json")
    assert json.loads(r.stdout)["request_id"] == "cli-1"
    r = _cctest("--db", str(db), "export", "--format", "jsonl")
    assert json.loads(r.stdout.splitlines()[0])["id"] == rid
    out = tmp_path / "e.csv"
    r = _cctest("--db", str(db), "export", "--format", "csv", "--output", str(out))
    assert r.returncode == 0 and out.read_text(encoding="utf-8").startswith("id,request_id,time")


def test_cli_before_anything_is_logged(db: Path, tmp_path: Path) -> None:
    """A missing log is an empty one (a hint on stderr, exit 0), and the CLI does not create it."""
    for args in (["list"], ["list", "--json"], ["export", "--format", "csv"]):
        r = _cctest("--db", str(db), *args)
        assert (r.returncode, r.stdout) == (0, ""), r.stderr
        assert r.stderr.count("\n") == 1 and "no defect log" in r.stderr and "language server" in r.stderr
    out = tmp_path / "e.jsonl"
    r = _cctest("--db", str(db), "export", "--output", str(out))
    assert r.returncode == 0 and f"{out} was not written" in r.stderr and not out.exists()
    r = _cctest("--db", str(db), "show", "1")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no defect log" in r.stderr
    assert not db.exists()


def test_cli_errors_are_one_sentence(db: Path) -> None:
    r = _cctest("--db", str(db), "list", "--limit", "0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--limit" in r.stderr
    DefectStore(db).close()
    r = _cctest("--db", str(db), "show", "42")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no record 42" in r.stderr
    r = _cctest("--db", str(db), "export", "--format", "xml")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from test_defects import make_result
    from cctest.defects import DefectStore
    store = DefectStore(sys.argv[1])
    big = "x = 1\\n" * 2000  # a large prompt: the write takes long enough to be interrupted
    i = 0
    while True:
        rid = store.add(make_result(prompt=big, tag=f"# {{i}}\\n"), request_id=f"{{sys.argv[2]}}-{{i}}")
        print(rid, flush=True)  # only after COMMIT: this record must survive
        i += 1
    """
)


@pytest.mark.slow
def test_sigkill_mid_write_loses_nothing_committed(db: Path, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(tests=str(Path(__file__).parent)))
    DefectStore(db).close()
    committed: list[int] = []
    for round_ in range(8):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(db), f"round{round_}"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the writer is up and has committed at least once
        time.sleep(0.05 + 0.02 * round_)
        os.kill(proc.pid, signal.SIGKILL)
        rest = proc.stdout.read()
        proc.wait()
        committed += [int(x) for x in (first + rest).split()]
        with DefectStore(db) as store:  # reopening recovers from the WAL
            con = sqlite3.connect(db)
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            con.close()
            have = {r.id: r for r in store.iter_all()}
            assert set(committed) <= set(have)  # every acknowledged record is there...
            for rec in have.values():  # ...and every record there is whole
                assert rec.prompt.startswith("x = 1\n") and len(rec.completions) == 3 and rec.outliers == [0]
    assert len(committed) >= 8
