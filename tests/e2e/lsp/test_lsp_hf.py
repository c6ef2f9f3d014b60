"""The language server with the real bundled model (backend ``hf``): what the editor gets is
exactly what the engine computes for the same prompt, model loaded once and reused."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import as_dict, complete, custom, inline, session

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

TEXT = "import os\n\n\ndef read_lines(path):\n    with open(path) as f:\n        \n"
SETTINGS = {"backend": "hf", "maxNewTokens": 8, "mutants": 2, "device": "cpu", "threads": 1}


async def test_bundled_model_end_to_end(tmp_path: Path) -> None:
    from cctest.backends import create_backend
    from cctest.config import Settings
    from cctest.engine import Engine

    settings, errors = Settings.from_mapping(SETTINGS)
    assert errors == []
    async with create_backend(settings) as backend:
        expected = await Engine(backend, settings).run(TEXT[: TEXT.rindex("        ") + 8], original=None)

    opts = {**SETTINGS, "defectLog": str(tmp_path / "d.sqlite3")}
    async with session(opts, tmp_path, open_source=TEXT) as client:
        res = await complete(client, 5, 8)
        again = await inline(client, 5, 8)
        stats = as_dict(await custom(client, "cctest/stats"))
    assert stats["backend"].startswith("hf cctest-code-small on cpu")
    assert stats["engineRuns"] == 1 and stats["cacheHits"] == 1  # the second request was a cache hit
    want = expected.completion.rstrip("\n")
    if want.strip():
        [item] = res.items
        assert item.text_edit.new_text == want
        assert item.detail.startswith(
            f"cctest: {len(expected.outliers)}/{len(expected.completions)} outliers"
        )
        assert again.items[0].insert_text == want
    else:  # the model had nothing to say here: both faces say nothing
        assert len(res.items) == 0 and len(again.items) == 0


async def test_the_model_load_is_logged_and_told_for_the_status_bar(tmp_path: Path) -> None:
    """The warm-up after ``initialized`` loads the bundled model: ``cctest/model`` says loading,
    then ready, and the log (window/logMessage) has the same two lines, in that order."""
    opts = {**SETTINGS, "defectLog": str(tmp_path / "d.sqlite3")}
    async with session(opts, tmp_path, open_source=None) as client:
        while len(client.models) < 2:  # type: ignore[attr-defined]
            await client.wait_for_notification("cctest/model")
        models = list(client.models)  # type: ignore[attr-defined]
        logged = [m.message for m in client.log_messages]
    assert [(m["state"], m["model"]) for m in models] == [("loading", "bundled"), ("ready", "bundled")]
    assert models[0]["text"] == "cctest: loading model bundled…"
    assert models[1]["text"] == f"cctest: loading model bundled… done ({models[1]['seconds']:.1f} s)"
    assert logged.index(models[0]["text"]) < logged.index(models[1]["text"])
