"""Credentials in server URLs are redacted wherever a URL is recorded: the one helper
(``cctest.redact``), the defect log's stored settings and its exports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_defects import make_result

from cctest.defects import DefectStore
from cctest.redact import redact_settings, redact_text, redact_url

ROOT = Path(__file__).resolve().parents[2]
SECRET_URL = "http://bob:pw-secret@127.0.0.1:8000/v1?api_key=sk-q-secret&token=t-secret&api-version=2"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (SECRET_URL, "http://127.0.0.1:8000/v1?api_key=REDACTED&token=REDACTED&api-version=2"),
        (
            "https://h/v1?access_token=a&X-Amz-Signature=s&q=1",
            "https://h/v1?access_token=REDACTED&X-Amz-Signature=REDACTED&q=1",
        ),
        ("http://:pw@[::1]:9/generate", "http://[::1]:9/generate"),
        ("http://user@h/#token=x", "http://h/"),
        ("http://h:99999/?key=x", "<a URL that cannot be parsed>"),
        ("models/coder-small", "models/coder-small"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_settings_leaves_other_settings_alone() -> None:
    settings = {"model": SECRET_URL, "mutants": 3, "api_key_env": "MY_KEY"}
    out = redact_settings(settings)
    assert out == {**settings, "model": redact_url(SECRET_URL)} and settings["model"] == SECRET_URL


def test_the_defect_log_stores_and_exports_no_url_credential(tmp_path: Path) -> None:
    with DefectStore(tmp_path / "defects.sqlite3") as store:
        store.add(make_result(), model="http openai", settings={"model": SECRET_URL, "mutants": 2})
        stored = store._query("SELECT settings FROM defects")[0][0]  # noqa: SLF001 - the raw row
        # a record written by an older version, which kept the query string
        store.add(make_result(tag="#old"), settings={"mutants": 2})
        with store._transaction() as db:  # noqa: SLF001 - planting the old row on purpose
            db.execute("UPDATE defects SET settings = ? WHERE id = 2", (json.dumps({"model": SECRET_URL}),))
        for fmt in ("jsonl", "csv"):
            store.export_to(tmp_path / f"out.{fmt}", fmt)
        shown = [str(r.settings) for r in store.list()[0]]
    texts = [stored, *shown, (tmp_path / "out.jsonl").read_text(), (tmp_path / "out.csv").read_text()]
    for text in texts:
        assert "pw-secret" not in text and "sk-q-secret" not in text and "t-secret" not in text, text
    assert "api_key=REDACTED" in stored


def test_a_server_url_given_to_the_local_backend_is_named_without_its_credentials() -> None:
    from cctest.backends.hf import HFBackend
    from cctest.errors import ModelLoadError

    with pytest.raises(ModelLoadError) as err:
        HFBackend(SECRET_URL)
    assert "--backend http" in str(err.value) and "pw-secret" not in str(err.value)
    assert "sk-q-secret" not in str(err.value) and "\n" not in str(err.value)


def test_redact_text_redacts_every_url_in_a_line() -> None:
    line = f'received {{"params": {{"model": "{SECRET_URL}"}}}} from file:///home/me/a.py'
    out = redact_text(line)
    assert "pw-secret" not in out and "sk-q-secret" not in out and "t-secret" not in out
    assert '"http://127.0.0.1:8000/v1?api_key=REDACTED' in out and "file:///home/me/a.py" in out


def test_the_language_servers_debug_log_holds_no_url_credential(tmp_path: Path) -> None:
    """At debug level pygls logs every message it receives, the client's settings included; the
    log file must still hold no credential (the server's own settings line neither)."""
    log = tmp_path / "lsp.log"
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "capabilities": {},
                "initializationOptions": {
                    "backend": "http",
                    "model": SECRET_URL,
                    "defectLog": str(tmp_path / "d.sqlite3"),
                },
            },
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    frames = b""
    for m in messages:
        body = json.dumps(m).encode()
        frames += b"Content-Length: %d\r\n\r\n" % len(body) + body
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "--log-file", str(log), "--log-level", "debug"],
        input=frames,
        capture_output=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    text = log.read_text()
    assert b'"id": 2' in proc.stdout or b'"id":2' in proc.stdout  # it answered the shutdown
    assert "127.0.0.1:8000" in text  # the URL was logged...
    assert "pw-secret" not in text and "sk-q-secret" not in text and "t-secret" not in text  # ...redacted
