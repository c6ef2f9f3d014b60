"""The setup behind `make demo`, `make setup-all` and `make test` (Makefile, scripts/):

- `make demo` needs .venv only: no root and no apt-get (bubblewrap and WordNet come with
  `make setup-all` and `make test`); without root, setup-all names each missing package in one
  sentence and goes on;
- apt-get waits for another package manager holding dpkg's lock, with one line saying so, and its
  own output (debconf's notes included) is shown only when it fails;
- every step prints a line when it starts and one when it ends, with its duration, and a long one
  says "still …" while it runs;
- `pip install -e` of the project warns nothing (setuptools' "Editable installation").
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


def _as_nobody() -> list[str]:
    """The prefix that runs a command as an ordinary user (nothing when the tests already are one)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv to become an ordinary user")
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A temporary folder an ordinary user may use too (pytest's tmp_path is the test user's only)."""
    path = Path(tempfile.mkdtemp(prefix="cctest-setup-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _fake_commands(bin_dir: Path, calls: Path, names: list[str], *, fail: bool, say: str = "") -> None:
    """Scripts standing in for apt-get & co.: each records its arguments and the time in `calls`."""
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        script = bin_dir / name
        script.write_text(
            "#!/bin/sh\n"
            f'echo "{name} $* @$(date +%s.%N)" >>{calls}\n'
            + (f"echo '{say}' >&2\n" if say else "")
            + (f'echo "{name} must not be called here" >&2; exit 97\n' if fail else "exit 0\n")
        )
        script.chmod(0o755)


def _env(tmp: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CCTEST_", "MAKE"))}
    env.update(PATH=f"{bin_dir}:{env['PATH']}", HOME=str(tmp), TMPDIR=str(tmp), **extra)
    return env


def _make_plan(target: str) -> list[str]:
    """The commands `make TARGET` would run (as a top-level make: `make test` runs these tests)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", target],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


def test_demo_needs_the_venv_only() -> None:
    """`make demo` runs setup.sh and the demo; setup.sh itself never reaches for apt-get."""
    plan = _make_plan("demo")
    assert plan == ["bash scripts/setup.sh", ".venv/bin/cctest complete examples/demo.py:6:5"]
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert "apt_install" not in setup and "apt-get install" not in setup.replace("# ", "")


def test_test_installs_the_system_packages_and_the_e2e_tools() -> None:
    assert _make_plan("setup-all") == ["bash scripts/setup.sh", "bash scripts/setup-system.sh"]
    steps = _make_plan("test")
    assert steps[:3] == ["bash scripts/setup.sh", "bash scripts/setup-system.sh", "bash scripts/setup-e2e.sh"]
    pytest_line = next(s for s in steps if "-m pytest" in s)
    assert "console_output_style=count" in pytest_line and " -q" not in pytest_line


def test_demo_setup_succeeds_as_an_ordinary_user_without_apt(public_tmp: Path) -> None:
    """`make setup` (all that `make demo` runs before the demo) as nobody, with an apt-get, sudo and
    dpkg that fail loudly and neither bubblewrap nor WordNet to be found, on an installed .venv
    (this checkout's is built on an interpreter nobody may not run: this one has the system's
    python3 and a stand-in torch): it succeeds, silently, and calls none of them."""
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    if not system_python:
        pytest.skip("needs a system python3")
    repo = public_tmp / "repo"
    repo.mkdir()
    shutil.copy2(ROOT / "Makefile", repo)
    shutil.copy2(ROOT / "pyproject.toml", repo)
    shutil.copytree(ROOT / "scripts", repo / "scripts")
    subprocess.run([system_python, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    (public_tmp / "stub" / "torch").mkdir(parents=True)
    (public_tmp / "stub" / "torch" / "__init__.py").write_text("")
    site = next((repo / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "stub.pth").write_text(f"{public_tmp / 'stub'}\n")
    (repo / ".venv" / ".cctest-installed").touch()
    calls = public_tmp / "calls"
    _fake_commands(public_tmp / "bin", calls, ["apt-get", "apt", "dpkg", "sudo"], fail=True)
    env = _env(
        public_tmp,
        public_tmp / "bin",
        CCTEST_BWRAP=str(public_tmp / "no-bwrap"),
        CCTEST_WORDNET_DIR=str(public_tmp / "no-wordnet"),
    )
    done = subprocess.run(
        [*_as_nobody(), "make", "setup"], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not calls.exists(), calls.read_text()
    assert (done.stdout, done.stderr) == ("bash scripts/setup.sh\n", "")


def test_setup_all_without_root_names_each_missing_package_once(public_tmp: Path) -> None:
    calls = public_tmp / "calls"
    _fake_commands(public_tmp / "bin", calls, ["apt-get", "sudo"], fail=True)
    env = _env(
        public_tmp,
        public_tmp / "bin",
        CCTEST_BWRAP=str(public_tmp / "no-bwrap"),
        CCTEST_WORDNET_DIR=str(public_tmp / "no-wordnet"),
    )
    done = subprocess.run(
        [*_as_nobody(), "bash", str(ROOT / "scripts" / "setup-system.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert not calls.exists()
    said = done.stderr.splitlines()
    assert len(said) == 2, said
    assert said[0].startswith("setup: bubblewrap (bwrap) is not installed, so the bench's sandbox")
    assert said[1].startswith("setup: WordNet's data is not installed")
    assert all("make setup-all" in line and line.endswith(").") for line in said)


def _present_wordnet(tmp: Path) -> Path:
    """A folder setup takes for installed WordNet data (it looks for data.noun)."""
    wordnet = tmp / "wordnet"
    wordnet.mkdir(exist_ok=True)
    (wordnet / "data.noun").write_text("")
    return wordnet


def test_setup_all_is_silent_when_everything_is_there(public_tmp: Path) -> None:
    wordnet = _present_wordnet(public_tmp)
    env = _env(public_tmp, public_tmp / "bin", CCTEST_BWRAP="sh", CCTEST_WORDNET_DIR=str(wordnet))
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-system.sh")], env=env, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def _hold_lock(path: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding `path` as dpkg and apt do (an fcntl lock) for `seconds`."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import fcntl, os, time
                fd = os.open({str(path)!r}, os.O_RDWR | os.O_CREAT)
                fcntl.lockf(fd, fcntl.LOCK_EX)
                print("held", flush=True)
                time.sleep({seconds})
            """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


@pytest.mark.slow
def test_apt_get_waits_for_another_package_manager(public_tmp: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("setup installs packages as root only")
    lock = public_tmp / "lock-frontend"
    calls = public_tmp / "calls"
    debconf = "debconf: delaying package configuration, since apt-utils is not installed"
    _fake_commands(public_tmp / "bin", calls, ["apt-get"], fail=False, say=debconf)
    env = _env(
        public_tmp,
        public_tmp / "bin",
        CCTEST_BWRAP=str(public_tmp / "no-bwrap"),
        CCTEST_WORDNET_DIR=str(_present_wordnet(public_tmp)),
        CCTEST_DPKG_LOCKS=str(lock),
    )
    holder = _hold_lock(lock, 3)
    try:
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / "setup-system.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        released = time.time()  # the holder sleeps 3 s; setup cannot have finished before
        assert holder.wait(timeout=10) == 0
    finally:
        holder.kill()
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0] == "setup: bubblewrap …"
    assert out[1] == "setup: waiting for another package manager to finish…"
    assert out[2].startswith("setup: the other package manager is done (")
    assert out[3].startswith("setup: bubblewrap done (") and out[3].endswith(" s)")
    assert debconf not in done.stdout + done.stderr  # apt's own output is kept for a failure
    # the fake installs nothing, so the sentence about the missing package follows
    assert done.stderr.startswith("setup: bubblewrap (bwrap) is not installed")
    recorded = calls.read_text().splitlines()
    assert [line.split(" @")[0] for line in recorded] == [
        "apt-get -o DPkg::Lock::Timeout=600 update -qq",
        "apt-get -o DPkg::Lock::Timeout=600 install -y -qq bubblewrap",
    ]
    first_call = float(recorded[0].split(" @")[1])
    assert first_call <= released


def test_a_failing_apt_get_shows_its_last_lines_and_setup_goes_on(public_tmp: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("setup installs packages as root only")
    calls = public_tmp / "calls"
    _fake_commands(public_tmp / "bin", calls, ["apt-get"], fail=True, say="E: Unable to locate package")
    env = _env(
        public_tmp,
        public_tmp / "bin",
        CCTEST_BWRAP=str(public_tmp / "no-bwrap"),
        CCTEST_WORDNET_DIR=str(_present_wordnet(public_tmp)),
        CCTEST_DPKG_LOCKS=str(public_tmp / "no-lock"),
    )
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-system.sh")], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0
    assert "setup: apt-get install bubblewrap failed (exit 97); its last lines:" in done.stderr
    assert "E: Unable to locate package" in done.stderr
    assert "setup: bubblewrap failed after " in done.stderr
    assert "setup: bubblewrap (bwrap) is not installed" in done.stderr


def test_steps_announce_start_end_and_duration_and_long_ones_say_still() -> None:
    script = (
        f"source {ROOT / 'scripts' / 'lib.sh'}; SETUP_TAG=demo-tag; "
        'step "a long build" with_heartbeat "building it" sleep 2.5; '
        'step "a failing one" false || echo "rc=$?"'
    )
    done = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "CCTEST_HEARTBEAT_S": "1"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    out = done.stdout.splitlines()
    assert out[0] == "demo-tag: a long build …"
    still = [line for line in out if "still" in line]
    assert still and all(re.fullmatch(r"demo-tag: still building it… \(\d s\)", line) for line in still)
    assert out[-3].startswith("demo-tag: a long build done (") and out[-3].endswith(" s)")
    assert out[-2:] == ["demo-tag: a failing one …", "rc=1"]
    assert done.stderr.startswith("demo-tag: a failing one failed after 0 s")


@pytest.mark.slow
def test_the_editable_build_warns_nothing(tmp_path: Path) -> None:
    """What `pip install -e .` runs (setuptools' PEP 660 hook), with every warning an error: the
    finder setuptools uses for a layout it cannot map to one folder warns "Editable installation"."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, project)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for package in ("cctest", "lsp_server"):
        shutil.copytree(ROOT / package, project / package, ignore=ignore)
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            "-c",
            f"from setuptools import build_meta; print(build_meta.build_editable({str(tmp_path)!r}))",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr
    assert done.stdout.splitlines()[-1].endswith(".whl")


EXTENSION = ROOT / "vscode-extension"


def test_npm_has_no_install_script_left_unreviewed() -> None:
    """npm warns about every dependency install script not covered by package.json's allowScripts."""
    npm = shutil.which("npm")
    if not npm or not (EXTENSION / "node_modules").is_dir():
        pytest.skip("needs npm and the extension's node_modules (make setup-e2e)")
    done = subprocess.run([npm, "install-scripts", "ls"], cwd=EXTENSION, capture_output=True, text=True)
    if "Unknown command" in done.stdout + done.stderr:
        pytest.skip("this npm has no allowScripts (before npm 11.x)")
    assert done.returncode == 0 and "No packages with unreviewed install scripts" in done.stdout, (
        done.stdout + done.stderr
    )


def test_the_extension_unit_tests_run_node_without_the_mock_timers_warning(tmp_path: Path) -> None:
    """`npm run test:unit`'s node command, on a test that uses MockTimers: no ExperimentalWarning."""
    node = shutil.which("node")
    if not node:
        pytest.skip("needs node")
    scripts = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))["scripts"]
    command = shlex.split(scripts["test:unit"].split("&&")[-1])
    assert command[0] == "node" and "out/test/unit/" in command
    test = tmp_path / "timers.test.js"
    test.write_text(
        "const { test, mock } = require('node:test');\n"
        "test('t', () => { mock.timers.enable({ apis: ['setTimeout'] }); mock.timers.reset(); });\n"
    )
    command[command.index("out/test/unit/")] = str(test)
    done = subprocess.run([node, *command[1:]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ExperimentalWarning" not in done.stdout + done.stderr
