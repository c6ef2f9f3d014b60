"""``cctest proxy`` as a user starts it (a subprocess): the line saying where it listens, a
warning for an address other than loopback, one sentence and exit status 2 for an upstream that
is not an http(s) URL or an engine option out of range, a clean stop on SIGTERM, and the engine's
options (those of ``cctest complete``) reaching the engine: ``--decide-after 0`` sends the rows
whole, in one request."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import aiohttp
import pytest
from proxy_helpers import Seen, openai_app, serving

from cctest.cli import build_parser
from cctest.commands.proxy import settings_from
from cctest.config import Settings
from cctest.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


async def _cctest(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cctest", "proxy", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT, env=ENV,
    )  # fmt: skip


async def _started(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
    found = re.fullmatch(r"cctest proxy: (http://\S+) -> (\S+) \(openai, repair\)\n", line)
    assert found, line
    return found.group(1)


async def test_it_says_where_it_listens_passes_requests_and_stops_cleanly_on_sigterm(
    tmp_path: Path,
) -> None:
    seen = Seen()
    async with serving(openai_app(seen, odd=set())) as up:
        proc = await _cctest("--upstream", up, "--port", "0", "--defect-log", str(tmp_path / "d.sqlite3"))
        try:
            url = await _started(proc)
            assert url.startswith("http://127.0.0.1:")
            async with aiohttp.ClientSession() as s, s.get(f"{url}/v1/models") as r:
                assert r.status == 200 and r.headers["X-Upstream"] == "yes"
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    assert b"warning" not in err and b"Traceback" not in err and not out.strip()
    assert [p for _, p, _, _ in seen.requests] == ["/v1/models"]
    async with aiohttp.ClientSession() as s:  # nothing listens there any more
        try:
            async with s.get(f"{url}/v1/models", timeout=aiohttp.ClientTimeout(total=5)):
                raise AssertionError("the proxy still answers after SIGTERM")
        except aiohttp.ClientConnectionError:
            pass


async def test_an_address_other_than_loopback_is_warned_about() -> None:
    proc = await _cctest("--upstream", "http://127.0.0.1:9", "--host", "0.0.0.0", "--port", "0")
    try:
        url = await _started(proc)
        assert url.startswith("http://0.0.0.0:")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0
    (warning,) = err.decode().splitlines()
    assert warning.startswith("cctest: warning: listening on 0.0.0.0: the proxy has no authentication")


async def test_an_upstream_that_is_not_an_http_url_is_one_sentence_and_exit_2() -> None:
    proc = await _cctest("--upstream", "ftp://models.example", "--port", "0")
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2 and not out
    (line,) = err.decode().splitlines()
    assert line.startswith("cctest: 'ftp://models.example' is not an http(s) URL;") and line.endswith(".")
    assert line.replace("e.g.", "").count(". ") == 0  # one sentence


def test_the_engine_options_of_cctest_complete_set_the_proxys_settings() -> None:
    argv = ["proxy", "--upstream", "http://127.0.0.1:1", "-k", "4", "--threshold", "2",
            "--relative-threshold", "0.5", "--scheme", "rel_r", "--scheme", "IRR",
            "--max-distance", "0.2", "--decide-after", "8", "--completion-scope", "line"]  # fmt: skip
    settings = settings_from(build_parser().parse_args(argv))
    assert (settings.mutants, settings.threshold, settings.relative_threshold) == (4, 2.0, 0.5)
    assert settings.schemes == ("REL_R", "IRR") and settings.max_distance == 0.2
    assert settings.decide_after == 8 and settings.completion_scope == "line"
    defaults = settings_from(build_parser().parse_args(argv[:3]))
    assert defaults == Settings()  # no option given: the settings' own defaults
    with pytest.raises(ConfigError):
        settings_from(build_parser().parse_args([*argv[:3], "--decide-after", "-1"]))


async def test_decide_after_0_sends_the_rows_whole_in_one_request(tmp_path: Path) -> None:
    """The command's ``--decide-after 0 -k 3`` reach the engine: the prompt and its 3 mutants go
    upstream as ONE request, not streamed (by default each row is a streamed request of its
    own: tests/e2e/proxy/test_proxy_openai.py)."""
    seen = Seen()
    before = "def total(items):\n    result = 0\n    for item in items:\n        "
    async with serving(openai_app(seen, odd=set())) as up:
        proc = await _cctest("--upstream", up, "--port", "0", "--decide-after", "0", "-k", "3",
                             "--defect-log", str(tmp_path / "d.sqlite3"))  # fmt: skip
        try:
            url = await _started(proc)
            body = {"model": "m", "prompt": before, "max_tokens": 16, "temperature": 0, "stream": True}
            async with aiohttp.ClientSession() as s, s.post(f"{url}/v1/completions", json=body) as r:
                assert r.status == 200
                await r.read()
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    (sent,) = seen.bodies("/v1/completions")
    assert sent["stream"] is False and sent["prompt"][0] == before and len(sent["prompt"]) == 4
