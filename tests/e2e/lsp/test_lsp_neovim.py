"""A real editor as the client: headless Neovim (0.7+, its built-in LSP client) attached to cctest-lsp.

Neovim opens a Python file, starts the server over stdio with ``vim.lsp.start_client``, asks for
``textDocument/completion`` at a cursor with ``vim.lsp.buf_request_sync`` and writes the answer
to a JSON file this test reads. ``scripts/setup-e2e.sh`` installs Neovim (Debian's ``neovim``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_helpers import server_env

pytestmark = pytest.mark.timeout(180)

LUA = r"""
local out_path = {out}
local function finish(value)
  local f = io.open(out_path, "w")
  f:write(vim.fn.json_encode(value))
  f:close()
  vim.cmd("qa!")
end
local ok, err = pcall(function()
  local client_id = vim.lsp.start_client({{
    name = "cctest",
    cmd = {{ {python}, "-m", "lsp_server" }},
    root_dir = {root},
    init_options = vim.fn.json_decode({options}),
  }})
  assert(client_id, "the server did not start")
  vim.lsp.buf_attach_client(0, client_id)
  local ready = vim.wait(60000, function()
    local c = vim.lsp.get_client_by_id(client_id)
    return c ~= nil and c.initialized == true
  end, 50)
  assert(ready, "the server did not initialize")
  vim.api.nvim_win_set_cursor(0, {{ {line}, {col} }})
  local params = vim.lsp.util.make_position_params()
  local answers = vim.lsp.buf_request_sync(0, "textDocument/completion", params, 60000)
  assert(answers and answers[client_id], "no answer")
  local answer = answers[client_id]
  vim.lsp.stop_client(client_id)
  finish({{ ok = true, result = answer.result, error = answer.err or answer.error, version = vim.version() }})
end)
if not ok then finish({{ ok = false, error = tostring(err) }}) end
"""


def _lua_str(s: str) -> str:
    return json.dumps(s)  # a JSON string literal is a valid Lua string literal for these inputs


def test_neovim_gets_the_repaired_completion(tmp_path: Path) -> None:
    assert shutil.which("nvim"), "Neovim is missing: run scripts/setup-e2e.sh (it installs Debian's neovim)"
    source = tmp_path / "total.py"
    source.write_text("def total(amount, rate):\n    acc = amount\n    tax = rate\n    \n", encoding="utf-8")
    out = tmp_path / "answer.json"
    options = {
        "backend": "rules",
        # the rule backend answers differently when it sees these words, which only the original
        # has (the REL mutants rename acc and tax): the original is the outlier, a mutant's wins
        "model": "fragile=acc = amount\n    tax",
        "schemes": ["REL_R", "REL_C"],
        "mutants": 6,
        "defectLog": str(tmp_path / "defects.sqlite3"),
    }
    lua = LUA.format(
        out=_lua_str(str(out)),
        python=_lua_str(sys.executable),
        root=_lua_str(str(tmp_path)),
        options=_lua_str(json.dumps(options)),
        line=4,  # Neovim's cursor: 1-based line, 0-based byte column
        col=4,
    )
    script = tmp_path / "client.lua"
    script.write_text(lua, encoding="utf-8")
    proc = subprocess.run(
        ["nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", str(source), "-c", f"luafile {script}"],
        capture_output=True,
        text=True,
        timeout=150,
        env=server_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), f"Neovim wrote no answer (rc {proc.returncode}): {proc.stderr[-2000:]}"
    answer = json.loads(out.read_text(encoding="utf-8"))
    assert answer["ok"], answer
    items = answer["result"]["items"]
    assert len(items) == 1
    assert items[0]["textEdit"]["newText"] == "return amount + rate"
    assert "repaired" in items[0]["detail"]
    assert items[0]["command"]["command"] == "cctest.accepted"
