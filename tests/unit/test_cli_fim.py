"""``cctest complete --json`` names the FIM template it used; a bad ``--fim`` is one sentence."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli import cctest_run

from cctest.backends.fim import DECLARED
from cctest.models import bundled_model_path

SOURCE = "import math\n\n\ndef area(r):\n    return \n\n\nprint(area(2))\n"


def test_complete_json_shows_the_fim_template(tmp_path: Path) -> None:
    path = tmp_path / "area.py"
    path.write_text(SOURCE)
    where = f"{path}:5:11"
    shown = {}
    for flags in ([], ["--fim", "starcoder-spm"], ["--fim", "off"], ["--fim", "codellama", "--no-suffix"]):
        r = cctest_run("complete", where, "--json", "--mutants", "1", "--threads", "1", *flags, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        shown[" ".join(flags)] = json.loads(r.stdout)["fim"]
    # auto: the template the bundled model's tokenizer_config.json declares; a named template is used
    declared = json.loads((bundled_model_path() / "tokenizer_config.json").read_text())[DECLARED]
    assert declared == "starcoder-spm"
    assert shown == {
        "": "starcoder-spm (spm)",
        "--fim starcoder-spm": "starcoder-spm (spm)",
        "--fim off": None,
        "--fim codellama --no-suffix": None,  # nothing after the cursor: nothing to fill in
    }
    r = cctest_run("complete", where, "--fim", "<pre>{prefix}", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("cctest: fim: '<pre>{prefix}' is not a FIM template;")
    assert r.stderr.count("\n") == 1
