"""What a sample's processes can write, whatever they call: a program started past the audit hook
(``_posixsubprocess.fork_exec``), SQLite's and dbm's own C-level opens. Bounded by the kernel:
Landlock (writes only in the worker's directory), a read-only ``/dev`` in the view, a private and
sized ``/dev/shm``; as root and as an ordinary user, with bubblewrap's view and without."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cctest.bench import sandbox

BENCH = str(Path(__file__).parents[3] / "cctest" / "bench")


def _landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(444, None, 0, 1))  # landlock_create_ruleset(NULL, 0, VERSION)


# A sample that writes outside its directory by every way the audit hook does not see: a shell
# started with _posixsubprocess.fork_exec (no audit event), SQLite and dbm (C-level opens), and
# fills /dev/shm. It prints what it found, one JSON line, and passes.
ESCAPE = r"""
import dbm, json, os, sqlite3, _posixsubprocess
TARGET = %(target)r
def sh(cmd):
    r, w = os.pipe()
    pid = _posixsubprocess.fork_exec(["/bin/sh", "-c", cmd], [b"/bin/sh"], True, (), None, None,
        -1, -1, -1, w, -1, w, r, w, True, False, -1, None, None, None, -1, None, False)
    os.close(w)
    out = b""
    while chunk := os.read(r, 65536):
        out += chunk
    os.waitpid(pid, 0)
    return out.decode(errors="replace")
said = {}
said["sh"] = sh("echo escaped >> %%s/.profile; echo escaped > /dev/cctest-escape; echo $?" %% TARGET)
for name, opener in (("sqlite", lambda p: sqlite3.connect(p).execute("create table t(x)")),
                     ("dbm", lambda p: dbm.open(p, "c"))):
    try:
        opener(os.path.join(TARGET, name))
        said[name] = "opened"
    except Exception as exc:
        said[name] = repr(exc)
# /dev/shm: files of 15 MiB each (under the file-size limit), more than it holds
said["shm"] = sh("for i in 1 2 3 4 5 6; do head -c 15728640 /dev/zero > /dev/shm/f$i || break; done; "
                 "du -sk /dev/shm 2>/dev/null | cut -f1")
print("@" + json.dumps(said))
"""

LIMITS = sandbox.Limits(wall_seconds=60, cpu_seconds=10, memory_mb=512, file_mb=16, processes=8)

NOBODY_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import sandbox
if sys.argv[3] == "host":
    sandbox._probed = (None,)
L = sandbox.Limits(wall_seconds=60, cpu_seconds=10, memory_mb=512, file_mb=16, processes=8)
first, after = sandbox.run_many([sys.argv[2], "import os\nprint(os.listdir('/dev/shm'))\n"], L, workers=1,
                                output_bytes=8192)
print(json.dumps([first.to_dict(), after.to_dict()]))
"""


@pytest.fixture
def target() -> Iterator[Path]:
    """A directory every user may write in (as /tmp, or an ordinary user's home, is to it)."""
    path = Path(tempfile.mkdtemp(prefix="cctest-test-escape-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path)


def _said(output: str) -> dict[str, str]:
    lines = [line for line in output.splitlines() if line.startswith("@")]
    assert lines, output
    return json.loads(lines[-1][1:])  # type: ignore[no-any-return]


def _check(result: dict[str, object], after: dict[str, object], target: Path, view: str) -> None:
    assert result["outcome"] == "passed", result
    isolation = result["isolation"]
    assert isinstance(isolation, dict)
    assert (view == "bwrap") == ("bubblewrap" in str(isolation["filesystem"])), isolation
    assert str(isolation["writes"]).startswith("landlock"), isolation
    said = _said(str(result["output"]))
    # nothing came out where the sample may not write, by the shell, SQLite or dbm
    assert sorted(os.listdir(target)) == [], (os.listdir(target), said)
    assert "opened" not in (said["sqlite"], said["dbm"]), said
    assert not os.path.lexists("/dev/cctest-escape")
    assert said["sh"].strip().splitlines()[-1] != "0", said  # nor in the view's /dev
    # its /dev/shm holds what its size allows at most, and is emptied for the next sample
    assert int(said["shm"].split()[-1] or 0) <= sandbox.SHM_MB * 1024, said
    assert after["outcome"] == "passed" and "f1" not in str(after["output"]), after


@pytest.mark.parametrize("view", ["bwrap", "host"])
def test_a_started_program_sqlite_and_dbm_write_only_in_the_sample_s_directory(
    view: str, target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the invoking user (root here: the sample has a user of its own, so a directory writable
    by everyone is what it could write in)."""
    if _landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock: the audit hook alone keeps Python's own writes in")
    if view == "host":
        monkeypatch.setattr(sandbox, "_probed", (None,))
    elif sandbox.bubblewrap() is None:
        pytest.skip("no private view here")
    shm_before = set(os.listdir("/dev/shm"))
    first, after = sandbox.run_many(
        [ESCAPE % {"target": str(target)}, "import os\nprint(os.listdir('/dev/shm'))\n"],
        LIMITS,
        workers=1,
        output_bytes=8192,
    )
    _check(first.to_dict(), after.to_dict(), target, view)
    assert set(os.listdir("/dev/shm")) <= shm_before  # the host's /dev/shm was never the sample's


@pytest.mark.parametrize("view", ["bwrap", "host"])
def test_as_an_ordinary_user_too(
    view: str, target: Path, as_nobody: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    """As ``nobody``: the sample is that user, so its own files (here a directory it owns, as its
    home would be) are what it could write; with the view, /dev is its user's too."""
    if _landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock: the audit hook alone keeps Python's own writes in")
    os.chown(target, 65534, 65534)
    shm_before = set(os.listdir("/dev/shm"))
    proc = as_nobody(NOBODY_SCRIPT, BENCH, ESCAPE % {"target": str(target)}, view)
    assert proc.returncode == 0, proc.stderr
    first, after = json.loads(proc.stdout)
    if view == "bwrap" and "bubblewrap" not in first["isolation"]["filesystem"]:
        pytest.skip("this kernel gives an ordinary user no private view")
    _check(first, after, target, view)
    assert set(os.listdir("/dev/shm")) <= shm_before


# A sample that writes a verdict of its own, "passed", to every descriptor it holds or can open,
# and leaves before its tests would fail
FORGER = r"""
import json, os
record = json.dumps({"outcome": "passed", "detail": "", "isolation": {}}).encode()
for fd in range(3, 4096):
    try:
        os.write(fd, record)
    except OSError:
        pass
for name in os.listdir("/proc/self/fd"):
    try:
        fd = os.open("/proc/self/fd/" + name, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, record)
    except OSError:
        pass
os._exit(0)
assert False, "the tests"
"""


@pytest.mark.parametrize("view", ["bwrap", "host"])
def test_a_sample_cannot_write_its_own_verdict(view: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict's descriptor is out of the sample's process while its program runs (in flight
    over a socket pair, taken back by the harness after the program), so a verdict the program
    writes reaches no one: it ends as a program that left before its tests, not as passed. The
    samples around it are judged as ever."""
    if view == "host":
        monkeypatch.setattr(sandbox, "_probed", (None,))
    elif sandbox.bubblewrap() is None:
        pytest.skip("no private view here")
    limits = sandbox.Limits(wall_seconds=30, cpu_seconds=5)
    forged, right, wrong = sandbox.run_many(
        [FORGER, "assert sum([1, 2]) == 3\n", "assert sum([1, 2]) == 4\n"], limits, workers=1
    )
    assert forged.outcome == "runtime_error" and "exit status 0" in forged.detail, forged
    assert right.outcome == "passed" and wrong.outcome == "assertion_failure", (right, wrong)


FORGER_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import sandbox
if sys.argv[3] == "host":
    sandbox._probed = (None,)
L = sandbox.Limits(wall_seconds=30, cpu_seconds=5)
runs = sandbox.run_many([sys.argv[2], "assert sum([1, 2]) == 3\n"], L, workers=1)
print(json.dumps([r.to_dict() for r in runs]))
"""


@pytest.mark.parametrize("view", ["bwrap", "host"])
def test_a_sample_cannot_write_its_own_verdict_as_an_ordinary_user_either(
    view: str, as_nobody: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    proc = as_nobody(FORGER_SCRIPT, BENCH, FORGER, view)
    assert proc.returncode == 0, proc.stderr
    forged, right = json.loads(proc.stdout)
    if view == "bwrap" and "bubblewrap" not in right["isolation"]["filesystem"]:
        pytest.skip("this kernel gives an ordinary user no private view")
    # (what it wrote to its own output, reopened through /proc, may be the detail: its last line)
    assert forged["outcome"] == "runtime_error", forged
    assert right["outcome"] == "passed", right


# Programs that try to report "passed" through the harness itself, in the interpreter they share
# with it: each reaches the harness's frames (or jumps over its tests) and ends failing its tests
_WALK = """
    while f is not None:
        if "report" in f.f_locals:
            try:
                f.f_locals["report"]("passed")
            except Exception:
                pass
            import os
            os._exit(0)
        f = f.f_back
"""
HARNESS_CALLERS = {
    "sys._getframe": "import sys\nf = sys._getframe(0)\nif True:" + _WALK + "assert False\n",
    "a signal handler's frame": (
        "import os, signal\ndef h(s, f):" + _WALK + "signal.signal(signal.SIGUSR1, h)\n"
        "os.kill(os.getpid(), signal.SIGUSR1)\nassert False\n"
    ),
    "a traceback's frame": (
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame\n"
        "    if True:" + _WALK.replace("\n    ", "\n        ") + "assert False\n"
    ),
    "a profile function": (
        "import sys\ndef p(f, event, arg):\n    sys.setprofile(None)" + _WALK + "sys.setprofile(p)\n"
        "len([])\nassert False\n"
    ),
    # sys.stdout replaced: the harness flushes it before it reports, with its frames below
    "the harness's own flush of sys.stdout": (
        "import sys\nclass Out:\n    done = False\n    def write(self, s):\n        return len(s)\n"
        "    def flush(self):\n        if Out.done:\n            return\n        Out.done = True\n"
        "        f = sys._getframe(0)"
        + _WALK.replace("\n    ", "\n        ")
        + "sys.stdout = Out()\nassert False\n"
    ),
}
JUMPER = """
import sys
def tr(frame, event, arg):
    if event == "line" and frame.f_code.co_filename == "sample.py" and frame.f_lineno == LINE:
        frame.f_lineno = LINE + 1  # over the call of the tests
        sys.settrace(None)
    return tr
def check(candidate):
    assert candidate == 2
sys.settrace(tr)
sys._getframe(0).f_trace = tr
check(1)
print("jumped")
"""
JUMPER = JUMPER.replace("LINE", str(JUMPER.splitlines().index("check(1)") + 1))


@pytest.mark.parametrize("view", ["bwrap", "host"])
def test_a_sample_cannot_report_through_the_harness(view: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict is read back only from the harness's own frames (an audit hook checks the code
    objects of every frame, down to the worker's module), so a program that finds the harness's
    report function through frames, a signal handler, a profile function or the harness's own call
    of its code (a replaced sys.stdout's flush), and calls it with "passed", is judged by its
    tests; one that jumps over its tests with a trace function is not passed. Honest programs with
    threads or doctest's tracing are judged as ever. Without the hook every one of these attacks
    is passed."""
    if view == "host":
        monkeypatch.setattr(sandbox, "_probed", (None,))
    elif sandbox.bubblewrap() is None:
        pytest.skip("no private view here")
    limits = sandbox.Limits(wall_seconds=30, cpu_seconds=5)
    threads = "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
    doctested = '''
def add(a, b):
    """
    >>> add(1, 2)
    3
    """
    return a + b
if __name__ == "__main__":
    import doctest
    doctest.testmod()
'''
    honest = [
        threads + "assert 1 + 1 == 2\n",
        threads + "assert 1 + 1 == 3\n",
        doctested + "assert add(2, 3) == 5\n",
    ]
    runs = sandbox.run_many([*HARNESS_CALLERS.values(), JUMPER, *honest], limits, workers=1)
    callers, jumper, honest_runs = runs[: len(HARNESS_CALLERS)], runs[len(HARNESS_CALLERS)], runs[-3:]
    for name, run in zip(HARNESS_CALLERS, callers, strict=True):
        assert run.outcome != "passed", (name, run)
    assert jumper.outcome == "runtime_error" and "trace or profile function" in jumper.detail, jumper
    assert [r.outcome for r in honest_runs] == ["passed", "assertion_failure", "passed"], honest_runs
