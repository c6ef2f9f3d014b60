"""The optional parts of the install, and the check a command makes before it needs one.

``pip install cctest`` installs what a programmer needs for repaired completions: ``complete``,
``mutate``, ``serve``, ``proxy``, ``defects`` and the language server. ``cctest[bench]`` adds what
``cctest bench`` needs (HumanEval, pass@k, BLEU, plots, the progress bar); ``cctest[suites]`` adds
the natural-language suites' needs (``bench syntactic|turbulence|operational`` and ``formula``);
``cctest[all]`` is both. pyproject.toml is the one place that says which package belongs to which
extra: the check reads it back from the installed distribution's metadata.
"""

from __future__ import annotations

import importlib.metadata
import re

from .errors import MissingExtraError

DISTRIBUTION = "cctest"
# a requirement's name, and the extra whose marker it carries (none: the core install)
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def requirements(extra: str) -> list[str]:
    """The distributions ``cctest[extra]`` adds to the core install, its nested extras followed
    (``suites`` includes ``bench``); empty where cctest is not installed as a distribution."""
    try:
        declared = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    names: list[str] = []
    for line in declared:
        marker = _EXTRA_MARKER.search(line)
        name = _REQUIREMENT.match(line)
        if not marker or marker[1] != extra or not name:
            continue
        if _normal(name[1]) == DISTRIBUTION:  # cctest[bench] inside cctest[suites]
            for inner in (name[2] or "").split(","):
                names += [n for n in requirements(inner.strip()) if n not in names]
        elif name[1] not in names:
            names.append(name[1])
    return names


def missing(extra: str) -> list[str]:
    """The distributions of ``cctest[extra]`` that are not installed."""
    gone = []
    for name in requirements(extra):
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            gone.append(name)
    return gone


def require(extra: str, command: str) -> None:
    """Raise ``MissingExtraError`` naming the ``pip install`` to run where ``command`` needs
    packages of ``cctest[extra]`` that are not installed."""
    gone = missing(extra)
    if gone:
        raise MissingExtraError(
            f"{command} needs {', '.join(gone)}, which the core install leaves out; "
            f"install them with: pip install 'cctest[{extra}]'."
        )


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
