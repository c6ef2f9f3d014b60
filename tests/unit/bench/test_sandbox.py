"""The sandbox against hostile and broken code: each sample must be contained and classified.

Real subprocesses, real limits; the limits are small so the suite stays fast.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cctest.bench import sandbox
from cctest.bench.datasets import load_humaneval
from cctest.bench.sandbox import (
    ROOT_PREFIX,
    Limits,
    _ancestors,
    _interpreter_paths,
    check_program,
    run_many,
    run_program,
    site_packages,
)

FAST = Limits(wall_seconds=6, cpu_seconds=1, memory_mb=512, file_mb=1, processes=8)

# a sample that leaves a file, an environment variable and a detached process behind it
LEAVES_THINGS = (
    "import os, time\n"
    "open('left.txt', 'w').write('x')\n"
    "os.environ['LEFT'] = '1'\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    time.sleep(600)\n"
)
# a sample that passes only in a directory of its own, holding its program and output alone, in
# a worker's directory holding it alone, with its own environment
FINDS_ITS_OWN = (
    "import os\n"
    "here = os.getcwd()\n"
    "assert sorted(os.listdir(here)) == ['.out', 'sample.py'], os.listdir(here)\n"
    "above = os.listdir(os.path.dirname(here))\n"
    "assert above == [os.path.basename(here)], above\n"
    "assert 'LEFT' not in os.environ and os.environ['HOME'] == here\n"
)


def _alive_with(marker: str) -> list[int]:
    """Processes of the sample ``marker`` (its ``sandbox_id``): forked from a worker, every
    process of the sample bears that name (``/proc/PID/comm``) unless it renames itself; a
    command line naming it counts too."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes()
            comm = Path(f"/proc/{p}/comm").read_text().strip()
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if (marker.encode() in cmd or comm == marker[:15]) and state != "Z":
            pids.append(int(p))
    return pids


@pytest.mark.parametrize(
    "source, outcome, detail",
    [
        ("def f(a, b):\n    return a + b\nassert f(1, 2) == 3\nimport hashlib, math\n", "passed", ""),
        ("assert 1 + 1 == 3, 'arithmetic'\n", "assertion_failure", "AssertionError: arithmetic"),
        ("def f(:\n    pass\n", "syntax_error", "SyntaxError"),
        ("def f():\n  return 1\n   return 2\n", "syntax_error", "IndentationError"),
        ("{}['missing']\n", "runtime_error", "KeyError"),
        ("import sys\nsys.exit(0)\nassert False\n", "runtime_error", "SystemExit"),
    ],
)
def test_ordinary_outcomes(source: str, outcome: str, detail: str) -> None:
    r = run_program(source, FAST)
    assert r.outcome == outcome
    assert detail in r.detail


def test_what_a_sample_printed_before_it_failed_is_kept() -> None:
    """Its output is the end of what it printed, also when an exception or a failed assertion ended
    it (its buffered output is flushed before the process leaves)."""
    r = run_program("print('before the failure')\nassert 1 == 2, 'no'\n", FAST, output_bytes=4096)
    assert r.outcome == "assertion_failure" and r.output == "before the failure\n", r
    r = run_program(
        "import sys\nprint('on stdout')\nsys.stderr.write('on stderr')\n1 / 0\n", FAST, output_bytes=4096
    )
    assert r.outcome == "runtime_error" and "on stdout" in r.output and "on stderr" in r.output, r


def test_infinite_loop_is_stopped() -> None:
    r = run_program("while True:\n    pass\n", FAST)
    assert r.outcome == "timeout" and "CPU-time limit" in r.detail  # its CPU limit, not the wall clock
    assert not _alive_with(r.sandbox_id)


def test_sleeping_forever_hits_the_wall_clock() -> None:
    r = run_program("import time\ntime.sleep(3600)\n", Limits(wall_seconds=1.5, cpu_seconds=1))
    assert r.outcome == "timeout" and "wall-clock" in r.detail


def test_fork_bomb_is_contained() -> None:
    r = run_program("import os\nwhile True:\n    os.fork()\n", FAST)
    assert r.outcome in ("resource_limit", "timeout")
    assert not _alive_with(r.sandbox_id)


def test_detached_daemon_does_not_outlive_the_sample() -> None:
    src = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(600)\n"
        "    os._exit(0)\n"
    )
    r = run_program(src, FAST)
    assert r.outcome == "passed"
    if r.isolation.get("pid") != "namespace" and not r.isolation.get("user", "same").startswith("uid"):
        pytest.skip(
            "this kernel gives neither a pid namespace nor a user of our own; "
            "only the process group is killed"
        )
    assert not _alive_with(r.sandbox_id)


def test_orphans_are_reaped_while_the_sample_runs() -> None:
    """What a sample leaves behind goes to its pid namespace's init, which must reap it: 30 orphans
    in a row leave no zombie of the sample's user behind while the sample still runs."""
    src = (
        "import os, time\n"
        "for i in range(30):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        if os.fork() == 0:\n"
        "            os._exit(0)  # an orphan once its parent, below, has gone\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "def zombies():\n"
        "    found = []\n"
        "    for p in os.listdir('/proc'):\n"
        "        try:\n"
        "            status = open('/proc/%s/status' % p).read()\n"
        "        except OSError:\n"
        "            continue\n"
        "        fields = dict(line.split(':', 1) for line in status.splitlines() if ':' in line)\n"
        "        if fields['State'].split()[0] == 'Z' and int(fields['Uid'].split()[0]) == os.getuid():\n"
        "            found.append(p)\n"
        "    return found\n"
        "for _ in range(40):  # (an init that reaps in its own time gets two seconds)\n"
        "    if not zombies():\n"
        "        break\n"
        "    time.sleep(0.05)\n"
        "assert not zombies(), zombies()\n"
    )
    r = run_program(src, FAST)
    if r.isolation.get("pid") != "namespace":
        pytest.skip(f"no pid namespace here, so no init to reap: {r.isolation}")
    assert r.outcome == "passed", r.detail


def test_where_the_init_cannot_be_cloned_a_forked_one_does_its_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """On x86-64 the pid namespace's init is a clone of the worker that blocks in ``pause``;
    elsewhere it is a fork that reaps: the same samples behave the same with that one."""
    cloned = 'SYS_PAUSE = {"x86_64": 34}.get(os.uname().machine)'
    assert cloned in sandbox._WORKER
    sandbox.stop_workers()
    monkeypatch.setattr(sandbox, "_WORKER", sandbox._WORKER.replace(cloned, "SYS_PAUSE = None"))
    try:
        test_orphans_are_reaped_while_the_sample_runs()
        test_detached_daemon_does_not_outlive_the_sample()
        test_a_sample_sees_only_its_own_processes_in_proc()
        test_each_sample_gets_fresh_namespaces_and_its_directory_goes(monkeypatch)
    finally:
        sandbox.stop_workers()  # the next test's samples get workers of the ordinary kind


PROC_PROBE = r"""
import json, os, signal
r, w = os.pipe()
kid = os.fork()
if kid == 0:
    os.close(w)
    os.read(r, 1)  # alive while its parent looks
    os._exit(0)
seen = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
procs = {}
for p in seen:
    try:  # its user and its name
        procs[p] = [os.stat("/proc/%d" % p).st_uid, open("/proc/%d/comm" % p).read().strip()]
    except OSError as exc:
        procs[p] = str(exc)
signalled = []
for p in seen:
    if p not in (os.getpid(), kid):
        try:  # a /proc/PID directory is also a pidfd (and the audit hook does not see this call)
            fd = os.open("/proc/%d" % p, os.O_RDONLY)
            signal.pidfd_send_signal(fd, 0)
            signalled.append(p)
        except OSError:
            pass
os.close(w)
os.waitpid(kid, 0)
print(json.dumps({"me": os.getpid(), "kid": kid, "uid": os.getuid(), "seen": seen,
                  "procs": procs, "signalled": signalled}))
"""


def _sees_only_its_own_processes(r: dict[str, Any]) -> None:
    """What ``PROC_PROBE`` saw (its ``RunResult`` as a dict): its own pid namespace in /proc."""
    iso = r["isolation"]
    if iso.get("pid") != "namespace":
        pytest.skip(f"no pid namespace here: {iso}")
    if iso.get("proc") == "inherited":
        pytest.skip(f"no mount namespace here for a /proc of the sample's own: {iso}")
    assert r["outcome"] == "passed", (r["detail"], r["output"])
    out = json.loads(r["output"].strip().splitlines()[-1])
    own = {out["me"], out["kid"]}
    seen = set(out["seen"])
    if iso.get("user", "same").startswith("uid"):
        assert seen == own, out  # (the namespace's init is root's: hidden from the sample's user)
        assert not out["signalled"], out
    else:
        # an ordinary user's init (pid 1) is the sample's own: its user, its user namespace
        assert seen - {1} == own and set(out["signalled"]) <= {1}, out
        assert out["procs"].get("1", [out["uid"]])[0] == out["uid"], out
    for p in own:  # (the worker, bubblewrap, the inits and the next sample's process are root's)
        assert out["procs"][str(p)][0] == out["uid"], out
    assert out["procs"][str(out["me"])][1] == r["sandbox_id"][:15], out  # its pid is its own there


def test_a_sample_sees_only_its_own_processes_in_proc() -> None:
    """A sample's /proc shows its own pid namespace: itself and its children, under the pids it
    knows itself by, and not its worker (nor bubblewrap, the inits, the next sample's waiting
    process), which the /proc of the worker's namespace, inherited from bubblewrap or the host,
    would show (the sample's pid 2 there was the worker); nothing it sees is another's to signal."""
    _sees_only_its_own_processes(run_program(PROC_PROBE, FAST, output_bytes=8192).to_dict())


PROC_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import sandbox
L = sandbox.Limits(wall_seconds=6, cpu_seconds=1, memory_mb=512, file_mb=1, processes=8)
print(json.dumps(sandbox.run_program(sys.argv[2], L, output_bytes=8192).to_dict()))
"""


def test_as_an_ordinary_user_too(as_nobody: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """The same without root: the sample's first process makes its namespaces (a user namespace
    among them) and its init mounts the /proc of their pid namespace."""
    proc = as_nobody(PROC_SCRIPT, str(Path(__file__).parents[3] / "cctest" / "bench"), PROC_PROBE)
    assert proc.returncode == 0, proc.stderr
    _sees_only_its_own_processes(json.loads(proc.stdout))


def test_huge_allocation_hits_the_memory_limit() -> None:
    r = run_program("block = bytearray(8 * 1024 ** 3)\n", FAST)
    assert r.outcome == "resource_limit" and "Memory" in r.detail


def test_huge_file_hits_the_file_size_limit() -> None:
    r = run_program("with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 65536)\n", FAST)
    assert r.outcome == "resource_limit"


def test_a_sample_that_fills_its_space_hits_a_resource_limit() -> None:
    """In bubblewrap's view a sample's directory is in memory, AREA_MB MiB at most: a sample that
    fills it (in files each under the file-size limit) ends as ``resource_limit``, and the next
    sample on that worker has the whole space again."""
    fill = (
        "n = 0\n"
        "while True:\n"
        "    with open('f%d' % n, 'wb') as f:\n"
        "        f.write(b'x' * (1024 * 1024 - 4096))\n"
        "    n += 1\n"
    )
    again = "open('big', 'wb').write(b'x' * (1024 * 1024 - 4096))\n"
    view = run_program("pass\n", FAST).isolation.get("filesystem", "")
    if "bubblewrap" not in view or not sandbox._bwrap_sizes_tmpfs():  # (else it would fill a disk)
        pytest.skip(f"no sized memory file system in a private view here: {view}")
    full, after = run_many([fill, again], FAST, workers=1)
    assert full.outcome == "resource_limit" and "No space left" in full.detail, full
    assert after.outcome == "passed", after.detail


def test_writing_outside_its_directory_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    r = run_program(f"open({str(target)!r}, 'w').write('x')\n", FAST)
    assert r.outcome == "runtime_error" and "outside" in r.detail
    assert not target.exists()
    r = run_program(f"import os\nos.remove({str(victim)!r})\n", FAST)
    assert r.outcome == "runtime_error"
    assert victim.read_text() == "keep me"
    # inside its own directory (its cwd and HOME) a sample may write
    r = run_program(
        "import os\nopen('a.txt', 'w').write('x')\nassert os.environ['HOME'] == os.getcwd()\n", FAST
    )
    assert r.outcome == "passed"


def test_network_is_unreachable() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def serve() -> None:
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        r = run_program(
            f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "s.sendall(b'hi')\n",
            FAST,
        )
    finally:
        thread.join()
        server.close()
    assert r.outcome == "runtime_error"
    assert not accepted
    r = run_program("import subprocess\nsubprocess.run(['true'])\n", FAST)
    assert r.outcome == "runtime_error" and "not allowed" in r.detail


def test_humaneval_programs_and_parallel_order() -> None:
    tasks = load_humaneval().tasks[:4]
    good = [check_program(t.prompt, t.ground_truth or "", t.tests or "", t.entry_point) for t in tasks]
    bad = check_program(tasks[0].prompt, "    return not True\n", tasks[0].tests or "", tasks[0].entry_point)
    results = run_many([*good, bad, "while True: pass\n"], FAST, workers=2)
    assert [r.outcome for r in results] == ["passed"] * 4 + ["assertion_failure", "timeout"]


def test_one_worker_serves_many_samples_each_in_a_fresh_directory() -> None:
    """Workers start once and fork a child per sample: six samples on two workers start at most
    two, and a sample finds nothing of the one before it in the same worker: not its files, not
    its processes (a daemon it left), not its environment."""
    before = sandbox.workers_started()
    results = run_many(["assert 1 + 1 == 2\n"] * 6, FAST, workers=2)
    assert [r.outcome for r in results] == ["passed"] * 6
    assert len({r.sandbox_id for r in results}) == 6
    assert sandbox.workers_started() - before <= 2
    first, second = run_many([LEAVES_THINGS, FINDS_ITS_OWN], FAST, workers=1)
    assert first.outcome == "passed", first.detail
    assert second.outcome == "passed", second.detail
    assert not _alive_with(first.sandbox_id)


def test_the_next_child_is_forked_ahead_or_not_and_either_way_nothing_is_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker forks the next sample's child while a sample runs only where a core is left over
    for it (more cores than workers); else when the request comes. Either way, and when one run of
    a worker forks ahead and the next does not (and back), each sample gets its own namespaces and
    a clean directory, and what a sample leaves running is gone before the next."""
    leave = LEAVES_THINGS
    find = FINDS_ITS_OWN + "raise Exception(repr(os.readlink('/proc/self/ns/pid')))\n"
    seen = []
    for cores in (1, 64, 1, 64):
        monkeypatch.setattr(sandbox, "_cores", lambda cores=cores: cores)
        results = run_many([leave, find, leave, find], FAST, workers=1)
        assert [r.outcome for r in results] == ["passed", "runtime_error"] * 2, [r.detail for r in results]
        for r in results[1::2]:
            assert r.detail.startswith("Exception: 'pid:"), r.detail
            seen.append((r.detail, r.isolation.get("pid")))
        for r in results[::2]:
            assert not _alive_with(r.sandbox_id)
    if seen[0][1] == "namespace":  # (not cctest's: a namespace's number is reused once it is gone)
        assert all(os.readlink("/proc/self/ns/pid") not in d for d, _ in seen)


def test_the_environment_is_the_sandboxs_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sample's environment holds the sandbox's few variables and its own HOME and TMPDIR,
    nothing of the process that runs cctest (made once in the worker, not per sample)."""
    token = secrets.token_hex(16)
    monkeypatch.setenv("CCTEST_TEST_SECRET", token)
    sandbox.stop_workers()  # workers started from now on are started with the variable set
    probe = "import os\nraise Exception(repr([dict(os.environ), os.getcwd()]))\n"
    results = run_many([probe] * 3, FAST, workers=1)
    for r in results:
        env, here = ast.literal_eval(r.detail.split(": ", 1)[1])
        assert token not in r.detail
        assert env == {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "HOME": here,
            "TMPDIR": here,
        }


def test_a_broken_worker_is_replaced() -> None:
    """A worker that dies (killed from outside here; a sample cannot reach it) is replaced, and
    the sample it was running gets an outcome."""
    assert run_program("pass\n", FAST).outcome == "passed"
    for worker in list(sandbox._idle):
        os.killpg(worker.proc.pid, signal.SIGKILL)
        worker.proc.wait()
    r = run_program("assert sum(range(4)) == 6\n", FAST)
    assert r.outcome == "passed", r.detail


NON_ROOT_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import sandbox
L = sandbox.Limits(wall_seconds=6, cpu_seconds=1, memory_mb=512, file_mb=1, processes=8)
cases = {
    "fork": "import os\nwhile True:\n    os.fork()\n",
    "socket": "import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=2)\n",
    "write": "open('/tmp/cctest-nonroot-escape', 'w').write('x')\n",
    "memory": "x = bytearray(8 * 1024 ** 3)\n",
    "ok": "import hashlib\nassert hashlib.sha1(b'').hexdigest()\n",
    "secret": "data = open(%r).read()\nprint(data)\nraise Exception(data)\n" % sys.argv[2],
    "caps": "status = dict(l.split(':', 1) for l in open('/proc/self/status') if l.startswith('Cap'))\n"
            "held = {k: v.strip() for k, v in status.items() if k != 'CapBnd' and int(v, 16)}\n"
            "assert not held, held\n",
}
print(json.dumps({k: sandbox.run_program(v, L, output_bytes=4096).to_dict() for k, v in cases.items()}))
"""


def test_the_non_root_path(as_nobody: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """As an ordinary user (no own uid, no CAP_SYS_ADMIN): the same hostile samples stay contained,
    no sample holds a capability (not even over the namespaces made for it), and with bubblewrap
    the user's own private files are out of reach."""
    token = secrets.token_hex(16)
    private = Path(tempfile.mkdtemp(prefix="cctest-test-nobody-"))  # the user's, readable by it only
    secret = private / "secret.txt"
    secret.write_text(token)
    for p in (private, secret):
        os.chown(p, 65534, 65534)
    try:
        proc = as_nobody(NON_ROOT_SCRIPT, str(Path(__file__).parents[3] / "cctest" / "bench"), str(secret))
    finally:
        shutil.rmtree(private)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["ok"]["outcome"] == "passed" and r["ok"]["isolation"]["user"] == "same"
    # none, also where the sample's namespaces came with a user namespace of its own
    assert r["caps"]["outcome"] == "passed", r["caps"]["detail"]
    assert r["ok"]["isolation"]["capabilities"] == "none"
    if r["ok"]["isolation"].get("userns"):  # (where the kernel gives user namespaces)
        # the worker's: it makes its samples' namespaces as root does, none of its own per sample
        assert r["ok"]["isolation"]["userns"] == "the worker's", r["ok"]["isolation"]
    assert r["fork"]["outcome"] in ("resource_limit", "timeout")
    assert r["socket"]["outcome"] == "runtime_error"
    assert r["write"]["outcome"] == "runtime_error" and not Path("/tmp/cctest-nonroot-escape").exists()
    assert r["memory"]["outcome"] == "resource_limit"
    assert not _alive_with(r["fork"]["sandbox_id"])
    if "bubblewrap" not in r["ok"]["isolation"]["filesystem"]:
        pytest.skip("this kernel gives an ordinary user no private view: the user's own files stay readable")
    assert r["secret"]["outcome"] == "runtime_error" and token not in json.dumps(r["secret"])


# ---- private files: what a sample may not read, and what its record may not hold


def _caps_are_zero_sample() -> str:
    return (
        "status = dict(l.split(':', 1) for l in open('/proc/self/status') if l.startswith('Cap'))\n"
        "held = {k: v.strip() for k, v in status.items() if int(v, 16)}\n"
        "assert not held, held\n"
    )


def _read_sample(path: str) -> str:
    # the ways a careless (or nosy) completion leaks a file: its output, and its exception (the record)
    return f"data = open({path!r}).read()\nprint(data)\nraise Exception(data)\n"


def test_files_private_to_root_or_to_the_home_stay_private(tmp_path: Path) -> None:
    """A file only root may read, a secret in the invoking user's home and /etc/shadow are out of a
    sample's reach, and its record holds no part of them; the sample holds no capability."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to make a file only root may read")
    token = secrets.token_hex(16)
    root_only = tmp_path / "root-only.txt"
    root_only.write_text(f"root-only {token}\n")
    root_only.chmod(0o600)
    home_dir = Path(tempfile.mkdtemp(prefix=".cctest-test-secret-", dir=Path.home()))
    try:
        home_dir.chmod(0o755)
        home_secret = home_dir / "credentials"
        home_secret.write_text(f"home {token}\n")
        home_secret.chmod(0o644)
        shadow = Path("/etc/shadow")
        shadow_lines = [
            line for line in (shadow.read_text().splitlines() if shadow.exists() else []) if line.strip()
        ]
        results = {
            str(p): run_program(_read_sample(str(p)), FAST, output_bytes=4096)
            for p in (root_only, home_secret, shadow)
        }
        caps = run_program(_caps_are_zero_sample(), FAST)
    finally:
        shutil.rmtree(home_dir)
    for path, r in results.items():
        record = json.dumps(r.to_dict())
        assert r.outcome == "runtime_error", (path, r)
        assert token not in record, path
        assert not any(line in record for line in shadow_lines), path
    assert caps.outcome == "passed", caps.detail
    assert caps.isolation["capabilities"] == "none"


def test_the_private_view_holds_nothing_else() -> None:
    """With bubblewrap, a sample sees no /home, no other temporary files, and no /etc beyond the loader's."""
    r = run_program("import os\nraise Exception(repr(sorted(os.listdir('/'))))\n", FAST)
    if "bubblewrap" not in r.isolation.get("filesystem", ""):
        pytest.skip(f"no private view on this machine: {r.isolation.get('filesystem')}")
    top = ast.literal_eval(r.detail.split(": ", 1)[1])  # the sample's own listing
    # a top directory beyond the system's is only the way to the interpreter or to cctest's
    # site-packages (a virtual environment in a home, say): it holds nothing but that way
    bound = _interpreter_paths()
    passages = {a for p in bound for a in _ancestors(p)}
    for name in ("home", "var", "opt", "work", "srv", "mnt", "root"):
        assert name not in top or f"/{name}" in passages, name
    for way in sorted(passages):
        r = run_program(f"import os\nraise Exception(repr(sorted(os.listdir({way!r}))))\n", FAST)
        below = {p[len(way) + 1 :].split("/")[0] for p in passages | set(bound) if p.startswith(way + "/")}
        seen = ast.literal_eval(r.detail.split(": ", 1)[1])
        if way in {tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir())}:
            # a virtual environment under the temporary directory (a clone in /tmp): the way to it
            # passes the samples' own directory, where the sample's working directory is
            seen = [n for n in seen if not n.startswith(f"{ROOT_PREFIX}{os.getpid()}-")]
        assert seen == sorted(below), way
    r = run_program(
        "import os, tempfile\n"
        "here = os.path.dirname(os.getcwd())\n"
        "assert os.listdir(here) == [os.path.basename(os.getcwd())], os.listdir(here)\n"
        "assert sorted(os.listdir('/etc')) == sorted(set(os.listdir('/etc')) & "
        "{'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'localtime'})\n"
        "assert not os.path.exists(os.path.expanduser('~root/.ssh'))\n",
        FAST,
    )
    assert r.outcome == "passed", r.detail


def test_installed_packages_are_importable_and_read_only() -> None:
    """A sample imports the packages of cctest's own environment (NumPy, a dependency), with its
    BLAS on one thread; it cannot change them, and with the private view they are mounted read-only."""
    r = run_program(
        "import numpy as np\n"
        "m = np.asmatrix([[1, 2], [3, 4]])\n"
        "assert int(np.linalg.det(m @ m.T).round()) == 4 and m.sum() == 10\n"
        f"assert np.__file__.startswith(tuple({site_packages()!r}))\n",
        FAST,
    )
    assert r.outcome == "passed", r.detail
    r = run_program("import numpy\nopen(numpy.__file__, 'a').write('# changed')\n", FAST)
    assert r.outcome == "runtime_error" and "not allowed" in r.detail
    # the options of the mount each site-packages directory lies in (the longest mount point above it)
    probe = (
        "mounts = [l.split()[4:6] for l in open('/proc/self/mountinfo')]\n"
        "def opts(p):\n"
        "    return max((m for m in mounts if p == m[0] or p.startswith(m[0].rstrip('/') + '/')),\n"
        "               key=lambda m: len(m[0]))[1]\n"
        f"raise Exception(repr({{p: opts(p) for p in {site_packages()!r}}}))\n"
    )
    r = run_program(probe, FAST)
    if "bubblewrap" not in r.isolation.get("filesystem", ""):
        pytest.skip(f"no private view on this machine: {r.isolation.get('filesystem')}")
    options = ast.literal_eval(r.detail.split(": ", 1)[1])
    assert options and all("ro" in o.split(",") for o in options.values()), options


FALLBACK_SCRIPT = r"""
import ctypes, json, logging, os, sys
sys.path.insert(0, sys.argv[1])
secret, token = sys.argv[2], sys.argv[3]
libc = ctypes.CDLL("libc.so.6", use_errno=True)
r1, w1 = os.pipe(); r2, w2 = os.pipe()
child = os.fork()
if child:
    # the parent maps every id one to one, so the child stays root with the same files
    os.read(r1, 1)
    for name in ("uid_map", "gid_map"):
        with open("/proc/%d/%s" % (child, name), "w") as f:
            f.write("0 0 4294967294")
    os.write(w2, b"x")
    os._exit(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
    print(json.dumps({"skip": "no user namespace: errno %d" % ctypes.get_errno()})); os._exit(0)
os.write(w1, b"x"); os.read(r2, 1)
# this namespace may make no mount namespace: bubblewrap is refused as a container's kernel would
with open("/proc/sys/user/max_mnt_namespaces", "w") as f:
    f.write("0")
warnings = []
class Keep(logging.Handler):
    def emit(self, record):
        warnings.append(record.getMessage())
logging.getLogger("sandbox").addHandler(Keep())
import sandbox
L = sandbox.Limits(wall_seconds=6, cpu_seconds=1, memory_mb=512, file_mb=1, processes=8)
caps = ("status = dict(l.split(':', 1) for l in open('/proc/self/status') if l.startswith('Cap'))\n"
        "assert not [v for v in status.values() if int(v, 16)], status\n")
runs = sandbox.run_many([
    "import hashlib, json\nassert hashlib.sha1(b'').hexdigest()\n",
    "raise Exception(open(%r).read())\n" % secret,
    "raise Exception(open('/etc/shadow').read())\n",
    caps,
], L, workers=2)
print(json.dumps({"runs": [r.to_dict() for r in runs], "warnings": warnings}))
sys.stdout.flush()
os._exit(0)
"""


def test_without_a_private_view_one_warning_and_still_no_capability(tmp_path: Path) -> None:
    """Where the kernel refuses bubblewrap's namespaces, one warning is logged and the sample still
    runs as its own user without capabilities: root's files stay unreadable."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to make a user namespace that refuses mount namespaces")
    token = secrets.token_hex(16)
    secret = tmp_path / "root-only.txt"
    secret.write_text(token)
    secret.chmod(0o600)
    bench_dir = str(Path(__file__).parents[3] / "cctest" / "bench")
    proc = subprocess.run(
        [sys.executable, "-I", "-c", FALLBACK_SCRIPT, bench_dir, str(secret), token],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if "skip" in out:
        pytest.skip(out["skip"])
    ok, leak, shadow, caps = out["runs"]
    assert len(out["warnings"]) == 1 and "no private filesystem view" in out["warnings"][0]
    assert ok["outcome"] == "passed", ok["detail"]  # the standard library is still reachable
    assert ok["isolation"]["filesystem"] == "host" and ok["isolation"]["user"].startswith("uid ")
    assert leak["outcome"] == "runtime_error" and token not in json.dumps(leak)
    assert shadow["outcome"] == "runtime_error" and "Permission denied" in shadow["detail"]
    assert caps["outcome"] == "passed", caps["detail"]


# ---- the samples' directories are removed, also after the cctest process was killed

KILLED_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import sandbox
print(sandbox._samples_root(), flush=True)
sandbox.run_program("import time\ntime.sleep(60)\n", sandbox.Limits(wall_seconds=60))
"""


def _samples_of(ancestor: int) -> list[str]:
    """The names (``cctest-…``) of the sample processes descending from process ``ancestor``."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = Path(f"/proc/{p}/stat").read_text()
            except OSError:
                continue
            names[int(p)] = stat[stat.index("(") + 1 : stat.rindex(")")]
            parents[int(p)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    found = []
    for pid, name in names.items():
        up = pid
        while up in parents and up != ancestor and up > 1:
            up = parents[up]
        if up == ancestor and name.startswith("cctest-"):
            found.append(name)
    return found


def test_a_killed_process_leaves_nothing_behind(tmp_path: Path) -> None:
    bench_dir = str(Path(__file__).parents[3] / "cctest" / "bench")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-I", "-c", KILLED_SCRIPT, bench_dir], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        root = Path(proc.stdout.readline().strip())
        assert root.name.startswith("cctest-sandbox-")
        sid = ""
        for _ in range(1200):  # a minute at most, until the sample runs (its directory is in the
            # view's memory, not under root: found by its process's name, among the script's)
            sid = next(iter(_samples_of(proc.pid)), "")
            if sid:
                break
            time.sleep(0.05)
        assert sid, "the sample never started"
        assert _alive_with(sid)
        from cctest.bench.sandbox import sweep_stale

        assert sweep_stale(str(tmp_path)) == []  # alive: its directory stays
        assert root.is_dir()
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert root.is_dir()  # a killed process cannot clean up after itself
    # the sample's worker sees its requests end and takes the sample with it (a minute at most)
    for _ in range(600):
        if not _alive_with(sid):
            break
        time.sleep(0.1)
    assert not _alive_with(sid)
    assert sweep_stale(str(tmp_path)) == [str(root)]
    assert list(tmp_path.iterdir()) == []


def test_a_sample_finds_nothing_of_the_one_before_in_the_network_namespace() -> None:
    """As root, a worker's samples share its network namespace, one after another: it has no
    interface up (loopback included), and a socket a sample leaves (held by a process it forked
    and left behind) is gone before the next sample starts."""
    leave = (
        "import os, socket, time\n"
        "a, b = socket.socketpair()\n"
        "if os.fork() == 0:\n"
        "    time.sleep(30)\n"
        "    os._exit(0)\n"
        "raise Exception(repr(open('/proc/net/unix').read().count('\\n')))\n"
    )
    # (the Unix sockets other than its own: the harness holds one, where its verdict waits)
    look = (
        "import os\n"
        "own = set()\n"
        "for f in os.listdir('/proc/self/fd'):\n"
        "    try:\n"
        "        own.add(os.readlink('/proc/self/fd/' + f))\n"
        "    except OSError:\n"
        "        pass\n"
        "lines = open('/proc/net/unix').read().splitlines()\n"
        "unix = [x for x in lines[1:] if 'socket:[%s]' % x.split()[6] not in own]\n"
        "net = 1 + len(unix), open('/proc/net/fib_trie').read()\n"
        "raise Exception(repr([os.readlink('/proc/self/ns/net'), net[0], '127.0.0.1' in net[1]]))\n"
    )
    results = run_many([leave, look], FAST, workers=1)
    if results[0].isolation.get("network") != "namespace":
        pytest.skip(f"no network namespaces on this machine: {results[0].isolation}")
    assert ast.literal_eval(results[0].detail.split(": ", 1)[1]) >= 3  # a header, the pair
    net, unix_lines, loopback = ast.literal_eval(results[1].detail.split(": ", 1)[1])
    assert net != os.readlink("/proc/self/ns/net")
    assert unix_lines == 1  # the header only
    assert not loopback


def test_each_sample_gets_fresh_namespaces_and_its_directory_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child is made ahead, while the previous sample runs (forced here: a core is left over):
    still, each sample of one worker has IPC, UTS and pid namespaces no other sample had, a network
    namespace that is not cctest's (as root, the worker's: see the next test), and a done sample's
    directory is gone from the worker's before the next sample starts."""
    monkeypatch.setattr(sandbox, "_cores", lambda: 64)
    probe = (
        "import os\n"
        "ns = [os.readlink('/proc/self/ns/' + n) for n in ('net', 'ipc', 'uts', 'pid')]\n"
        "raise Exception(repr([ns, os.getcwd(), os.listdir(os.path.dirname(os.getcwd()))]))\n"
    )
    results = run_many([probe] * 4, FAST, workers=1)
    seen = [ast.literal_eval(r.detail.split(": ", 1)[1]) for r in results]
    if results[0].isolation.get("pid") != "namespace" or results[0].isolation.get("ipc") != "namespace":
        pytest.skip(f"no namespaces on this machine: {results[0].isolation}")
    # (a namespace's number is reused once it is gone: the next sample's were made while the one
    # before it still ran, so theirs must differ, and none is this process's)
    mine = [os.readlink("/proc/self/ns/" + n) for n in ("net", "ipc", "uts", "pid")]
    for (before, _, _), (after, _, _) in zip(seen, seen[1:], strict=False):
        assert all(b != a for b, a in zip(before[1:], after[1:], strict=True)), (before, after)
    for ns, _, _ in seen:
        assert all(m != x for m, x in zip(mine, ns, strict=True)), (mine, ns)
    dirs = [d for _, d, _ in seen]
    assert len(set(dirs)) == 4
    for d, listed in [(d, listed) for _, d, listed in seen]:
        assert listed == [os.path.basename(d)], listed  # (the ones before it: gone)


def test_the_next_sample_waits_out_of_sight() -> None:
    """cctest sends a worker its next request while a sample runs; the worker makes the next
    sample's directory only once the sample before is gone, so no sample ever sees another's."""
    look = (
        "import os, time\n"
        "time.sleep(0.3)\n"  # (the next request is in the worker's pipe by now)
        "here = os.getcwd()\n"
        "above = os.listdir(os.path.dirname(here))\n"
        "assert above == [os.path.basename(here)], above\n"
    )
    results = run_many([look] * 4, FAST, workers=1)
    assert [r.outcome for r in results] == ["passed"] * 4, [r.detail for r in results]


def test_a_tree_nested_thousands_deep_goes_before_the_next_sample() -> None:
    """A sample that nests directories deeper than a path may be long (and than Python recurses),
    taking its rights off the last: the worker still empties its directory, and the next sample on
    it finds nothing and needs no new worker."""
    nest = (
        "import os\n"
        "for _ in range(2500):\n"
        "    os.mkdir('d')\n"
        "    os.chdir('d')\n"
        "open('leaf', 'w').write('x')\n"
        "os.chmod('.', 0o500)\n"
    )
    run_program("pass\n", FAST)  # a worker, started
    before = sandbox.workers_started()
    first, second = run_many([nest, FINDS_ITS_OWN], FAST, workers=1)
    assert first.outcome == "passed", first.detail
    assert second.outcome == "passed", second.detail
    assert sandbox.workers_started() == before


def test_a_tree_nested_thousands_deep_is_removed_by_cctest_too(tmp_path: Path) -> None:
    """Where a worker could not empty its directory, cctest removes it, however deep."""
    top = tmp_path / "area"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(2500):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    os.chmod(fd, 0o500)
    os.close(fd)
    try:
        sandbox._remove_tree(str(top))
        assert not top.exists()
    finally:  # (a tree this deep left behind would break pytest's own clean-up of old runs)
        subprocess.run(["rm", "-rf", str(top)], check=False)


def test_a_worker_that_cannot_empty_its_directory_hands_the_next_sample_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker that could not remove what a sample left (forced here: nothing a sample does on
    this machine causes it) runs no further sample: it answers the request already sent to it with
    "retry" and ends, and that sample runs on a new worker, seeing nothing of the one before."""
    assert "clean = emptied()" in sandbox._WORKER
    sandbox.stop_workers()
    monkeypatch.setattr(sandbox, "_WORKER", sandbox._WORKER.replace("clean = emptied()", "clean = False"))
    try:
        before = sandbox.workers_started()
        results = run_many([LEAVES_THINGS, FINDS_ITS_OWN, FINDS_ITS_OWN], FAST, workers=1)
        assert [r.outcome for r in results] == ["passed"] * 3, [r.detail for r in results]
        assert sandbox.workers_started() - before == 3  # one per sample: each retires after one
    finally:
        sandbox.stop_workers()
