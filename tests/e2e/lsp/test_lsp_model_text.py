"""A model's answer holding a lone surrogate (which JSON allows), through the language server with
a real HTTP completion server: the answer is served with U+FFFD in its place and its defect record
is written, not dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web
from local_server import server
from lsp_helpers import SOURCE, as_dict, custom, inline, session

pytestmark = pytest.mark.timeout(120)

ANSWER = "return a + b  # \ud800 é \U0001f600 \ude00\ud83d"
SAFE = "return a + b  # \ufffd é \U0001f600 \ufffd\ufffd"


async def test_a_surrogate_answer_is_served_replaced_and_its_record_written(tmp_path: Path) -> None:
    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"choices": [{"index": 0, "text": ANSWER}]})

    async with server({"/v1/completions": answer}) as url:
        opts = {
            "backend": "http",
            "model": url,
            "mutants": 2,
            "logAll": True,
            "defectLog": str(tmp_path / "d.sqlite3"),
        }
        async with session(opts, tmp_path, open_source=SOURCE) as client:
            [item] = (await inline(client, 1, 4)).items
            assert item.insert_text == SAFE
            page = as_dict(await custom(client, "cctest/defects", {"limit": 10}))
    assert page["total"] == 1, page
    assert SAFE in json.dumps(page, ensure_ascii=False)
