"""The VS Code extension's ``.vsix`` as ``make setup-e2e`` builds it (``vsce package --no-dependencies``
after the esbuild bundle): what it carries and how big it is.

A ``.vsix`` is a zip. It must hold the bundle (``dist/extension.js``, which ``package.json``'s
``main`` names), ``package.json``, the README, the LICENSE and the resources, and nothing else: no
TypeScript sources, no tests, no ``node_modules``, no source maps. Because no ``node_modules`` ship,
the bundle must need nothing at run time but VS Code's API and Node's own modules.
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[3] / "vscode-extension"
VSIX = EXTENSION / "cctest.vsix"
# what the package is built from: a .vsix older than one of these is stale
INPUTS = ("package.json", "package-lock.json", ".vscodeignore", "README.md", "LICENSE")
# vsce's own two files, then the extension's: the bundle, the manifest, README and LICENSE (renamed)
EXPECTED = {
    "[Content_Types].xml",
    "extension.vsixmanifest",
    "extension/dist/extension.js",
    "extension/package.json",
    "extension/readme.md",
    "extension/LICENSE.txt",
}
MAX_VSIX_BYTES = 1 << 20  # the bundle compresses to about a tenth of its size


@pytest.fixture(scope="module")
def vsix() -> Iterator[zipfile.ZipFile]:
    assert VSIX.is_file(), f"{VSIX} is missing: `make setup-e2e` builds it"
    sources = [EXTENSION / name for name in INPUTS] + [
        p for p in (EXTENSION / "src").rglob("*.ts") if "test" not in p.relative_to(EXTENSION / "src").parts
    ]
    newer = [str(p.relative_to(EXTENSION)) for p in sources if p.stat().st_mtime > VSIX.stat().st_mtime]
    assert not newer, f"{VSIX.name} is older than {', '.join(newer)}: `make setup-e2e` rebuilds it"
    with zipfile.ZipFile(VSIX) as archive:
        yield archive


def test_it_carries_the_bundle_the_manifest_the_readme_and_the_license_only(vsix: zipfile.ZipFile) -> None:
    names = set(vsix.namelist())
    resources = {n for n in names if n.startswith("extension/resources/")}
    assert names - resources == EXPECTED
    assert not [n for n in names if "node_modules" in n or "/test" in n or n.endswith((".ts", ".map"))]
    manifest = json.loads(vsix.read("extension/package.json"))
    assert manifest == json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    assert manifest["main"] == "./dist/extension.js"
    assert f'Version="{manifest["version"]}"' in vsix.read("extension.vsixmanifest").decode()


def test_it_is_small(vsix: zipfile.ZipFile) -> None:
    assert VSIX.stat().st_size <= MAX_VSIX_BYTES
    assert sum(i.file_size for i in vsix.infolist()) <= 4 * MAX_VSIX_BYTES


def test_the_bundle_needs_only_vscode_and_nodes_own_modules(vsix: zipfile.ZipFile) -> None:
    """``--no-dependencies`` ships no ``node_modules``: every package the extension uses
    (vscode-languageclient) must be inside the bundle."""
    bundle = vsix.read("extension/dist/extension.js").decode()
    required = set(re.findall(r"""\brequire\(\s*["']([^"']+)["']\s*\)""", bundle))
    builtins = subprocess.run(
        ["node", "-p", "require('module').builtinModules.join('\\n')"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()  # fmt: skip
    assert "vscode" in required
    assert {r.removeprefix("node:") for r in required} - {"vscode", *builtins} == set()
