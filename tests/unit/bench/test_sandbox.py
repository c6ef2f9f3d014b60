"""The sandbox against hostile and broken code: each sample must be contained and classified.

Real subprocesses, real limits; the limits are small so the suite stays fast.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from cctest.bench.datasets import load_humaneval
from cctest.bench.sandbox import Limits, check_program, run_many, run_program

FAST = Limits(wall_seconds=6, cpu_seconds=1, memory_mb=512, file_mb=1, processes=8)


def _alive_with(marker: str) -> list[int]:
    """Processes whose command line names the sample's directory (every process of the sample has it)."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes()
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != "Z":
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


def test_infinite_loop_is_stopped() -> None:
    r = run_program("while True:\n    pass\n", FAST)
    assert r.outcome == "timeout"
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


def test_huge_allocation_hits_the_memory_limit() -> None:
    r = run_program("block = bytearray(8 * 1024 ** 3)\n", FAST)
    assert r.outcome == "resource_limit" and "Memory" in r.detail


def test_huge_file_hits_the_file_size_limit() -> None:
    r = run_program("with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 65536)\n", FAST)
    assert r.outcome == "resource_limit"


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
    good = [check_program(t.prompt, t.ground_truth, t.tests, t.entry_point) for t in tasks]
    bad = check_program(tasks[0].prompt, "    return not True\n", tasks[0].tests, tasks[0].entry_point)
    results = run_many([*good, bad, "while True: pass\n"], FAST, workers=2)
    assert [r.outcome for r in results] == ["passed"] * 4 + ["assertion_failure", "timeout"]


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
}
print(json.dumps({k: sandbox.run_program(v, L).to_dict() for k, v in cases.items()}))
"""


def test_the_non_root_path() -> None:
    """As an ordinary user (no own uid, no CAP_SYS_ADMIN): the same hostile samples stay contained."""
    import json
    import shutil
    import subprocess

    system_python = shutil.which("python3", path="/usr/bin:/bin")
    if os.geteuid() != 0 or not shutil.which("setpriv") or not system_python:
        pytest.skip("needs root (to become an ordinary user), setpriv and a system python3")
    bench_dir = str(Path(__file__).parents[3] / "cctest" / "bench")
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            system_python,
            "-I",
            "-c",
            NON_ROOT_SCRIPT,
            bench_dir,
        ],
        capture_output=True,
        text=True,
        cwd="/tmp",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["ok"]["outcome"] == "passed" and r["ok"]["isolation"]["user"] == "same"
    assert r["fork"]["outcome"] in ("resource_limit", "timeout")
    assert r["socket"]["outcome"] == "runtime_error"
    assert r["write"]["outcome"] == "runtime_error" and not Path("/tmp/cctest-nonroot-escape").exists()
    assert r["memory"]["outcome"] == "resource_limit"
    assert not _alive_with(r["fork"]["sandbox_id"])
