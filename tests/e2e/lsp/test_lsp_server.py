"""The language server end to end: a real server process driven by pytest-lsp's real LSP client.

Mostly with the rule backend (deterministic, instant): its completion of ``def f(a, b):`` is
``return a + b``; ``model: "fragile=NAME"`` makes it answer differently whenever NAME is in the
prompt, which, as mutants rename NAME away, makes the original completion an outlier.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_helpers import (
    ROOT,
    URI,
    as_dict,
    command,
    complete,
    custom,
    inline,
    rules_options,
    send_raw,
    session,
)
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities

from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.defects import DefectStore
from cctest.engine import Engine

pytestmark = pytest.mark.timeout(120)


async def test_initialize_advertises_features(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path), tmp_path) as client:
        caps = client.init_result.capabilities  # type: ignore[attr-defined]
        assert caps.inline_completion_provider is not None
        assert caps.completion_provider is not None
        assert set(caps.execute_command_provider.commands) == {
            "cctest.clearDefects",
            "cctest.exportDefects",
            "cctest.accepted",
        }
        sync = caps.text_document_sync
        assert sync.change == lsp.TextDocumentSyncKind.Incremental
        assert client.init_result.server_info.name == "cctest-lsp"  # type: ignore[attr-defined]
        assert client.messages == []  # valid settings: no warning


async def test_inline_completion_at_several_cursors(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path), tmp_path) as client:
        # at the end of the def line: a new, indented line
        res = await inline(client, 0, 14)
        [item] = res.items
        assert item.insert_text == "\n    return a + b"
        assert item.range == lsp.Range(
            start=lsp.Position(line=0, character=14), end=lsp.Position(line=0, character=14)
        )
        assert (
            item.command is not None
            and item.command.command == "cctest.accepted"
            and len(item.command.arguments) == 1
        )
        # on the indented blank line
        [item] = (await inline(client, 1, 4)).items
        assert item.insert_text == "return a + b"
        assert item.range.start == lsp.Position(line=1, character=4)
        # after "return" in the second function: the other function's parameters
        [item] = (await inline(client, 5, 10)).items
        assert item.insert_text == " value + factor"
        # two requests: two distinct request ids for the acceptance report
        [again] = (await inline(client, 5, 10)).items
        assert again.command.arguments != item.command.arguments


@pytest.mark.parametrize("encodings", [None, ["utf-16"], ["utf-8"], ["utf-32"]])
async def test_positions_use_the_negotiated_encoding(tmp_path: Path, encodings: list[str] | None) -> None:
    # "😋" is one code point, two UTF-16 units, four UTF-8 bytes: the end of line 0 is character
    # 23, 24 or 26 depending on the encoding; a server counting wrong lands inside "return"
    line = 'def f(a, b="😋"): return'
    caps = client_capabilities("neovim")
    caps.general = lsp.GeneralClientCapabilities(position_encodings=encodings)
    async with session(
        rules_options(tmp_path), tmp_path, open_source=line + "\nx = 1\n", capabilities=caps
    ) as client:
        encoding = client.init_result.capabilities.position_encoding or "utf-16"  # type: ignore[attr-defined]
        assert encoding == (encodings or ["utf-16"])[0]  # the LSP default is UTF-16
        width = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
        end = (
            len(line.encode(encoding.replace("utf-16", "utf-16-le").replace("utf-32", "utf-32-le"))) // width
        )
        [item] = (await inline(client, 0, end)).items
        assert item.insert_text == " a + b"  # the prompt ended right after "return"
        assert item.range.start == lsp.Position(line=0, character=end)


async def test_completion_item_shows_the_verdict(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path), tmp_path) as client:
        res = await complete(client, 1, 4)
        [item] = res.items
        assert item.label == "return a + b"
        # the same engine, in this process, on the same prompt
        settings, _ = Settings.from_mapping(rules_options(tmp_path))
        expected = await Engine(RuleBackend(), settings).run("def add(a, b):\n    ")
        assert len(expected.completions) >= 2 and expected.outliers == ()
        assert item.detail == f"cctest: 0/{len(expected.completions)} outliers · consistent"
        # and the notification a client's status line shows
        for _ in range(100):  # sent right after the answer
            if client.verdicts:  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.02)
        [verdict] = [as_dict(v) for v in client.verdicts]  # type: ignore[attr-defined]
        assert verdict["text"] == item.detail and verdict["suspect"] is False and verdict["uri"] == URI
        assert item.text_edit.new_text == "return a + b"
        assert "return a + b" in item.documentation.value
        assert item.command.command == "cctest.accepted"


async def test_incremental_and_full_changes(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path), tmp_path) as client:
        # rename the parameters of add() by an incremental edit: "(a, b)" -> "(left, right)"
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=URI, version=2),
                content_changes=[
                    lsp.TextDocumentContentChangePartial(
                        range=lsp.Range(
                            start=lsp.Position(line=0, character=8), end=lsp.Position(line=0, character=12)
                        ),
                        text="left, right",
                    )
                ],
            )
        )
        [item] = (await inline(client, 1, 4)).items
        assert item.insert_text == "return left + right"
        # a whole-document change
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=URI, version=3),
                content_changes=[
                    lsp.TextDocumentContentChangeWholeDocument(text="def mul(x, y, z):\n    \n")
                ],
            )
        )
        [item] = (await inline(client, 1, 4)).items
        assert item.insert_text == "return x + y + z"


async def test_invalid_settings_warn_and_fall_back(tmp_path: Path) -> None:
    opts = rules_options(tmp_path, mutants="many", threshold=-3, bogusOption=1)
    async with session(opts, tmp_path) as client:
        [item] = (await inline(client, 1, 4)).items  # still serving, with the defaults
        assert item.insert_text == "return a + b"
        await asyncio.sleep(0.2)
        warnings = [m for m in client.messages if m.type == lsp.MessageType.Warning]
        assert len(warnings) == 1
        assert "'mutants'" in warnings[0].message and "'threshold'" in warnings[0].message
        assert "bogusOption" in warnings[0].message
        stats = as_dict(await custom(client, "cctest/stats"))
        assert stats["settings"]["mutants"] == 10 and stats["settings"]["backend"] == "rules"
        # settings that are not an object at all
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={"cctest": 7}))
        [item] = (await inline(client, 1, 4)).items
        assert item.insert_text == "return a + b"
        assert any("must be an object" in m.message for m in client.messages)


async def test_settings_change_switches_mode(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path), tmp_path) as client:
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"cctest": {"mode": "off"}})
        )
        assert len((await inline(client, 1, 4)).items) == 0
        assert len((await complete(client, 1, 4)).items) == 0
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"cctest": {"mode": "monitor"}})
        )
        [item] = (await complete(client, 1, 4)).items
        assert item.text_edit.new_text == "return a + b"
        assert item.detail == "cctest: not checked yet (monitor mode)"
        for _ in range(100):  # the background check finishes soon after the answer
            stats = as_dict(await custom(client, "cctest/stats"))
            if stats["monitorChecks"]:
                break
            await asyncio.sleep(0.05)
        assert stats["monitorChecks"] == 1 and stats["settings"]["mode"] == "monitor"
        # asked again: the cached answer now carries the background check's verdict
        [item] = (await complete(client, 1, 4)).items
        assert item.text_edit.new_text == "return a + b" and item.detail.endswith("outliers · consistent")
        assert stats["settings"]["mutants"] == 4  # initializationOptions still apply under the change


FRAGILE_TEXT = "def total(amount, rate):\n    acc = amount\n    tax = rate\n    \n"


def FRAGILE_OPTIONS(tmp_path: Path) -> dict[str, object]:  # noqa: N802 - a constant that needs tmp_path
    # the rule backend answers differently when the prompt contains these words; the REL mutants
    # rename acc and tax, so none of them does
    return rules_options(
        tmp_path, model="fragile=acc = amount\n    tax", schemes=["REL_R", "REL_C"], mutants=6
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cctest", "defects", *args], capture_output=True, text=True, cwd=ROOT
    )


async def test_defect_logged_read_back_accepted_exported_cleared(tmp_path: Path) -> None:
    db = tmp_path / "defects.sqlite3"
    async with session(FRAGILE_OPTIONS(tmp_path), tmp_path, open_source=FRAGILE_TEXT) as client:
        res = await complete(client, 3, 4)
        [item] = res.items
        # only the original prompt has "acc = amount\n    tax", so its completion is the odd one
        # out; the repaired completion comes from the mutants, which renamed those variables
        assert item.text_edit.new_text == "return amount + rate"
        assert "· repaired" in item.detail
        assert "Original completion (replaced)" in item.documentation.value
        request_id = item.command.arguments[0]

        page = as_dict(await custom(client, "cctest/defects", {"limit": 10}))
        assert page["total"] == 1
        [rec] = page["records"]
        assert rec["uri"] == URI and rec["line"] == 3 and rec["character"] == 4
        assert rec["requestId"] == request_id and rec["suspect"] is True and 0 in rec["outliers"]
        assert rec["originalCompletion"].startswith("return rate * 2")
        assert rec["chosenCompletion"] == "return amount + rate\n"
        assert len(rec["completions"]) == len(rec["similarity"]) == len(rec["mutants"]) + 1
        assert rec["settings"]["backend"] == "rules" and rec["accepted"] is None
        assert as_dict(await custom(client, "cctest/defects", {"uri": "file:///other.py"}))["total"] == 0

        # the same prompt again: served from the cache, not recorded twice
        [again] = (await complete(client, 3, 4)).items
        assert again.text_edit.new_text == item.text_edit.new_text

        # the client reports acceptance with the item's command
        assert as_dict(await command(client, "cctest.accepted", request_id)) == {
            "accepted": True,
            "record": rec["id"],
        }
        # a completion that was not suspect is accepted too (counted, no record)
        [plain] = (await inline(client, 0, len("def total(amount, rate):"))).items
        out = as_dict(await command(client, "cctest.accepted", plain.command.arguments[0]))
        assert out["accepted"] is True
        stats = as_dict(await custom(client, "cctest/stats"))
        assert stats["accepted"] == 2 and stats["recorded"] == 1 and stats["cacheHits"] == 1
        assert stats["log"]["acceptances"] == 2 and stats["log"]["accepted_records"] == 1
        assert stats["meanTimingsMs"]["total"] > 0

        # the CLI reads the same store while the server runs
        listed = _cli("--db", str(db), "list")
        assert listed.returncode == 0 and f"{rec['id']:>6}" in listed.stdout and "accepted" in listed.stdout
        shown = json.loads(_cli("--db", str(db), "show", str(rec["id"]), "--json").stdout)
        assert shown["request_id"] == request_id and shown["accepted"] is True

        export = tmp_path / "out.jsonl"
        res = as_dict(await command(client, "cctest.exportDefects", str(export), "jsonl"))
        assert res["count"] == 1 and json.loads(export.read_text())["id"] == rec["id"]
        assert as_dict(await command(client, "cctest.clearDefects")) == {"deleted": 1}
        assert as_dict(await custom(client, "cctest/defects"))["total"] == 0


async def test_log_all_records_every_request(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path, logAll=True), tmp_path) as client:
        await inline(client, 1, 4)
        await inline(client, 5, 10)
        page = as_dict(await custom(client, "cctest/defects"))
        assert page["total"] == 2 and all(r["suspect"] is False for r in page["records"])


async def test_cancel_request(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path, debounceMs=5000), tmp_path) as client:
        params = lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=URI), position=lsp.Position(line=1, character=4)
        )
        fut = client.protocol.send_request(lsp.TEXT_DOCUMENT_COMPLETION, params, msg_id="to-cancel")
        await asyncio.sleep(0.3)
        client.cancel_request(lsp.CancelParams(id="to-cancel"))
        with pytest.raises(JsonRpcException) as err:
            await asyncio.wait_for(asyncio.wrap_future(fut), 3)  # well before the 5 s debounce
        assert err.value.code == -32800  # RequestCancelled
        stats = as_dict(await custom(client, "cctest/stats"))
        assert stats["cancelled"] == 1 and stats["engineRuns"] == 0  # the model work never started


async def test_latest_request_per_document_wins(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path, debounceMs=400), tmp_path) as client:
        older = asyncio.ensure_future(inline(client, 1, 4))
        await asyncio.sleep(0.1)
        newer = asyncio.ensure_future(inline(client, 5, 10))
        assert len((await older).items) == 0  # stale: dropped before any model work
        [item] = (await newer).items
        assert item.insert_text == " value + factor"
        stats = as_dict(await custom(client, "cctest/stats"))
        assert stats["superseded"] == 1 and stats["engineRuns"] == 1
        # the same cursor asked twice at once (inline + ordinary completion): one engine run
        a, b = await asyncio.gather(inline(client, 1, 4), complete(client, 1, 4))
        assert a.items[0].insert_text == b.items[0].text_edit.new_text == "return a + b"
        stats = as_dict(await custom(client, "cctest/stats"))
        assert stats["engineRuns"] == 2 and stats["joined"] == 1


async def test_malformed_params_and_unknown_methods(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path), tmp_path) as client:
        with pytest.raises(JsonRpcException) as err:
            await asyncio.wait_for(
                send_raw(client, "bad-1", "textDocument/completion", {"textDocument": 5}), 5
            )
        assert err.value.code == -32602
        with pytest.raises(JsonRpcException) as err:
            await asyncio.wait_for(custom(client, "cctest/defects", {"limit": "ten"}), 5)
        assert err.value.code == -32602 and "limit" in err.value.message
        with pytest.raises(JsonRpcException) as err:
            await asyncio.wait_for(custom(client, "cctest/defects", [1, 2]), 5)
        assert err.value.code == -32602
        with pytest.raises(JsonRpcException) as err:
            await asyncio.wait_for(custom(client, "cctest/nope", {}), 5)
        assert err.value.code == -32601  # MethodNotFound
        with pytest.raises(JsonRpcException):
            await asyncio.wait_for(command(client, "cctest.accepted"), 5)
        with pytest.raises(JsonRpcException):
            await asyncio.wait_for(command(client, "cctest.exportDefects", str(tmp_path / "x"), "xml"), 5)
        client.protocol.notify("cctest/unknownNotification", {"x": 1})
        # a document nobody opened and that is not on disk: an empty answer, not an error
        assert len((await inline(client, 0, 0, uri="file:///nowhere/missing.py")).items) == 0
        # and the server still serves
        [item] = (await inline(client, 1, 4)).items
        assert item.insert_text == "return a + b"


async def test_backend_failure_gives_empty_answer_and_one_log_message(tmp_path: Path) -> None:
    text = "def ok(a, b):\n    \n\ndef BOOM(a, b):\n    \n\ndef BOOM2(c):\n    \n"
    async with session(rules_options(tmp_path, model="fail_on=BOOM"), tmp_path, open_source=text) as client:
        assert len((await inline(client, 4, 4)).items) == 0
        assert len((await inline(client, 7, 4)).items) == 0
        errors = [m for m in client.log_messages if m.type == lsp.MessageType.Error]
        assert len(errors) == 1 and "rules backend failed" in errors[0].message
        [item] = (await inline(client, 1, 4)).items  # a prompt without BOOM: works again
        assert item.insert_text == "return a + b"
        assert any("answers again" in m.message for m in client.log_messages)
        stats = as_dict(await custom(client, "cctest/stats"))
        assert stats["failures"] == 2


async def test_backend_that_cannot_be_built(tmp_path: Path) -> None:
    opts = {
        "backend": "hf",
        "model": str(tmp_path / "no-such-model"),
        "defectLog": str(tmp_path / "d.sqlite3"),
    }
    async with session(opts, tmp_path) as client:
        assert len((await inline(client, 1, 4)).items) == 0
        await asyncio.sleep(0.2)
        errors = [m for m in client.log_messages if m.type == lsp.MessageType.Error]
        assert len(errors) == 1 and "backend failed" in errors[0].message
        # switching to a working backend recovers without a restart
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"cctest": {"backend": "rules", "model": None}})
        )
        [item] = (await inline(client, 1, 4)).items
        assert item.insert_text == "return a + b"


async def test_monitor_mode_answers_the_original_and_logs_the_defect_later(tmp_path: Path) -> None:
    opts = {**FRAGILE_OPTIONS(tmp_path), "mode": "monitor"}
    async with session(opts, tmp_path, open_source=FRAGILE_TEXT) as client:
        [item] = (await complete(client, 3, 4)).items
        # monitor mode does not repair: the user gets the model's own (here: odd) completion at once
        assert item.text_edit.new_text == "return rate * 2  # fragile"
        assert item.detail == "cctest: not checked yet (monitor mode)"
        for _ in range(200):  # the background check records the defect
            page = as_dict(await custom(client, "cctest/defects"))
            if page["total"]:
                break
            await asyncio.sleep(0.05)
        [rec] = page["records"]
        assert rec["mode"] == "monitor" and rec["suspect"] is True and 0 in rec["outliers"]
        assert rec["originalCompletion"] == "return rate * 2  # fragile\n"
        assert rec["chosenCompletion"] == "return amount + rate\n"
        assert rec["requestId"] == item.command.arguments[0]


async def test_changing_the_defect_log_path(tmp_path: Path) -> None:
    first, second = tmp_path / "a.sqlite3", tmp_path / "other" / "b.sqlite3"
    async with session(rules_options(tmp_path, logAll=True, defectLog=str(first)), tmp_path) as client:
        await inline(client, 1, 4)
        assert as_dict(await custom(client, "cctest/defects"))["total"] == 1
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"cctest": {"defectLog": str(second)}})
        )
        await inline(client, 5, 10)
        page = as_dict(await custom(client, "cctest/defects"))
        assert page["total"] == 1 and page["records"][0]["line"] == 5
    for db, line in ((first, "2:5"), (second, "6:11")):
        listed = _cli("--db", str(db), "list")
        assert listed.returncode == 0 and f"{URI}:{line}" in listed.stdout


async def test_an_unacceptable_defect_log_path_is_reported_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    """``defectLog`` naming a link to a file readable by all, then a named pipe, a text file and a
    ``~user`` with no home (as initializationOptions, then as a workspace's configuration change):
    each is reported in one log message, none is changed or waited on, the server keeps answering
    without a log, and a good path works again without a restart."""
    passwd = tmp_path / "passwd"
    passwd.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    os.chmod(passwd, 0o644)
    link = tmp_path / "link.sqlite3"
    link.symlink_to(passwd)
    fifo = tmp_path / "pipe.sqlite3"
    os.mkfifo(fifo, 0o644)
    text = tmp_path / "notes.sqlite3"
    text.write_bytes(b"not a database\n")
    os.chmod(text, 0o644)
    good = tmp_path / "good.sqlite3"

    def errors(client: Any) -> list[str]:
        return [m.message for m in client.log_messages if m.type == lsp.MessageType.Error]

    async with session(rules_options(tmp_path, logAll=True, defectLog=str(link)), tmp_path) as client:
        for n, (path, problem) in enumerate(
            (
                (link, "is a symbolic link"),
                (fifo, "is not a regular file"),
                (text, "is not a cctest defect log"),
                (Path("~no-such-user-cctest/d.sqlite3"), "names no user's home directory"),
            )
        ):
            if n:
                client.workspace_did_change_configuration(
                    lsp.DidChangeConfigurationParams(settings={"cctest": {"defectLog": str(path)}})
                )
            [item] = (await inline(client, 1, 4)).items  # still serving
            assert item.insert_text == "return a + b"
            stats = as_dict(await custom(client, "cctest/stats"))
            assert stats["log"] is None and stats["defectLog"] == str(path)
            with pytest.raises(JsonRpcException, match="the defect log is unavailable"):
                await custom(client, "cctest/defects")
            await asyncio.sleep(0.2)
            assert len(errors(client)) == n + 1
            assert str(path) in errors(client)[n] and problem in errors(client)[n]
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"cctest": {"defectLog": str(good)}})
        )
        await inline(client, 5, 10)
        assert as_dict(await custom(client, "cctest/defects"))["total"] == 1
        # exporting through a link would replace it: refused, what it names untouched
        with pytest.raises(JsonRpcException, match="is a symbolic link"):
            await command(client, "cctest.exportDefects", str(link), "jsonl")
    assert (stat.S_IMODE(passwd.stat().st_mode), passwd.read_bytes()) == (
        0o644,
        b"root:x:0:0:root:/root:/bin/bash\n",
    )
    assert (stat.S_IMODE(text.stat().st_mode), text.read_bytes()) == (0o644, b"not a database\n")
    assert link.is_symlink() and stat.S_ISFIFO(fifo.lstat().st_mode)
    assert stat.S_IMODE(fifo.lstat().st_mode) == 0o644


# a second process holding the defect log locked (BEGIN EXCLUSIVE) until a line on its stdin
_LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
"""


async def test_a_server_started_while_the_log_is_locked_records_once_the_lock_is_gone(tmp_path: Path) -> None:
    """The server's first record came while another process held the log locked: it said so, and
    then never recorded again, the lock long gone. It tries again at the next record."""
    db = tmp_path / "defects.sqlite3"
    with DefectStore(db):  # an existing log (in WAL mode), as a server made it
        pass
    locker = subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert locker.stdout is not None and locker.stdout.readline() == "locked\n"
        async with session(rules_options(tmp_path, logAll=True, defectLog=str(db)), tmp_path) as client:
            [item] = (await inline(client, 1, 4)).items  # answered; its record waits for the log
            assert item.insert_text == "return a + b"
            for _ in range(600):  # until the server says the log is locked (after its wait)
                said = [m.message for m in client.log_messages if "database is locked" in m.message]
                if said:
                    break
                await asyncio.sleep(0.1)
            assert said, [m.message for m in client.log_messages]
            assert locker.stdin is not None
            locker.stdin.write("\n")
            locker.stdin.close()
            assert locker.wait(timeout=30) == 0  # the lock is gone
            await inline(client, 5, 10)
            for _ in range(300):
                with contextlib.suppress(JsonRpcException):  # the log unavailable: not yet
                    page = as_dict(await custom(client, "cctest/defects"))
                    if page["total"]:
                        break
                await asyncio.sleep(0.1)
            else:
                pytest.fail(
                    f"nothing recorded after the lock was gone: {[m.message for m in client.log_messages]}"
                )
            assert [r["line"] for r in page["records"]] == [5]
    finally:
        locker.kill()
        locker.wait()
    listed = _cli("--db", str(db), "list")
    assert listed.returncode == 0 and f"{URI}:6:11" in listed.stdout


async def test_stats_show_the_model_url_without_its_credentials(tmp_path: Path) -> None:
    url = "http://me:s3cret@127.0.0.1:9/v1?api_key=sk-live-1&api-version=2"
    opts = {"backend": "http", "model": url, "mode": "off", "defectLog": str(tmp_path / "d.sqlite3")}
    async with session(opts, tmp_path) as client:
        stats = as_dict(await custom(client, "cctest/stats"))
    assert stats["settings"]["model"] == "http://127.0.0.1:9/v1?api_key=REDACTED&api-version=2"
    assert "s3cret" not in json.dumps(stats) and "sk-live-1" not in json.dumps(stats)


async def test_backend_is_rebuilt_only_for_backend_settings(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path), tmp_path) as client:
        await inline(client, 1, 4)
        for change, builds in (
            ({"mutants": 2, "mode": "repair", "debounceMs": 1}, 1),
            ({"maxNewTokens": 8}, 2),
        ):
            client.workspace_did_change_configuration(
                lsp.DidChangeConfigurationParams(settings={"cctest": change})
            )
            [item] = (await inline(client, 1, 4)).items
            assert item.insert_text == "return a + b"
            stats = as_dict(await custom(client, "cctest/stats"))
            assert stats["backendBuilds"] == builds, (change, stats["backendBuilds"])


async def test_empty_configuration_change_pulls_the_section(tmp_path: Path) -> None:
    async with session(rules_options(tmp_path), tmp_path) as client:
        client.set_configuration({"mode": "off"}, section="cctest")  # what workspace/configuration returns
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
        for _ in range(100):
            stats = as_dict(await custom(client, "cctest/stats"))
            if stats["settings"]["mode"] == "off":
                break
            await asyncio.sleep(0.05)
        assert stats["settings"]["mode"] == "off"
        assert len((await inline(client, 1, 4)).items) == 0
