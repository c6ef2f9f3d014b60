"""Each setting is described once (cctest/config.py); what is derived from it stays in step.

Validation, the LSP options, the VS Code contribution and the docs' table all come from the
``Spec`` of each ``Settings`` field; the generated files must equal what the generator writes.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from cctest.config import SPECS, Settings, backend_key
from cctest.errors import ConfigError, UnknownSchemeError
from lsp_server import settings as wire

ROOT = Path(__file__).resolve().parents[2]


def test_the_generated_files_are_up_to_date():
    # fails when a setting changed in config.py and tools/sync_settings.py was not run
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "sync_settings.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


def test_the_check_notices_a_stale_file(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import sync_settings
    finally:
        sys.path.remove(str(ROOT / "tools"))
    stale_json = tmp_path / "package.json"
    stale_json.write_text(sync_settings.PACKAGE_JSON.read_text().replace('"default": 10', '"default": 11'))
    monkeypatch.setattr(sync_settings, "PACKAGE_JSON", stale_json)
    assert sync_settings.stale() == [stale_json]
    prop = sync_settings.vscode_configuration()["properties"]["cctest.mutants"]
    assert (prop["default"], prop["minimum"], prop["maximum"]) == (10, 0, 64)


def test_every_field_has_one_spec_and_its_default_is_valid():
    for f in dataclasses.fields(Settings):
        spec = SPECS[f.name]
        assert spec.description, f.name
        assert spec.validate(f.default) == f.default, f.name


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("mutants", 64, 65),
        ("mutants", 0, -1),
        ("timeout", 0.5, 0),
        ("top_p", 1, 1.01),
        ("debounce_ms", 0, -5),
        ("dtype", "bfloat16", "int8"),
        ("schemes", ["REP_R"], ["NOPE"]),
    ],
)
def test_bounds_and_choices_come_from_the_spec(name, good, bad):
    assert Settings().replace(**{name: good})
    # a scheme name goes through the mutators' own parser, whose sentence every command prints
    with pytest.raises(UnknownSchemeError if name == "schemes" else ConfigError):
        Settings().replace(**{name: bad})


def test_the_wire_options_and_the_backend_key_derive_from_the_specs():
    by_name = {o.name: o for o in wire.OPTIONS}
    assert by_name["mutants"].maximum == SPECS["mutants"].maximum == 64
    assert by_name["schemes"].enum == SPECS["schemes"].allowed() and "REP_R" in by_name["schemes"].enum
    assert [o.name for o in wire.OPTIONS if not o.backend] == [
        wire.wire_name(n) for n, s in SPECS.items() if not s.backend
    ]
    base = Settings()
    for name, spec in SPECS.items():
        if spec.kind is not int or spec.maximum is not None:
            continue
        changed = base.replace(**{name: getattr(base, name) + 1})
        assert (backend_key(changed) != backend_key(base)) == spec.backend, name
