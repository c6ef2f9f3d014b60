"""The registry of mutation schemes: adding a scheme is one module and one line here.

Each scheme module defines its ``Scheme`` objects (``base.Scheme``), which name the site visitors
they read (``_walk.SiteVisitor``); the generator runs the visitors of the schemes it is asked for
in one batched libcst pass. The order here is the order the schemes are tried in (within a round
of ``selection.for_variety``) and listed in.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import UnknownSchemeError
from . import cmp, doc, fmt, form, gra, ini, irr, loop, rel, rep, rtf
from .base import Scheme

SCHEMES: dict[str, Scheme] = {
    s.name: s
    for s in (
        rep.REP_R,
        rep.REP_C,
        rel.REL_R,
        rel.REL_C,
        irr.SCHEME,
        rtf.SCHEME,
        gra.GRA_R,
        gra.GRA_C,
        ini.SCHEME,
        form.SCHEME,
        fmt.SCHEME,
        cmp.SCHEME,
        loop.SCHEME,
        doc.SCHEME,
    )
}
DEFAULT_SCHEMES: tuple[str, ...] = tuple(n for n, s in SCHEMES.items() if s.default)


def canonical_schemes(schemes: Sequence[str]) -> tuple[str, ...]:
    """The registry's spelling of each scheme name, given in any case (``rel_r`` → ``REL_R``).

    The one parser of scheme names (CLI, settings, language server): an unknown name raises
    UnknownSchemeError, one sentence that lists the schemes.
    """
    by_upper = {name.upper(): name for name in SCHEMES}
    names = []
    for given in schemes:
        name = by_upper.get(given.strip().upper())
        if name is None:
            raise UnknownSchemeError(
                f"unknown mutation scheme '{given}'; the schemes are " + ", ".join(SCHEMES) + "."
            )
        names.append(name)
    return tuple(names)


def scheme_names(schemes: Sequence[str]) -> list[str]:
    """Validate scheme names (in any case); () means the default ones (all but LOOP), in order."""
    wanted = set(canonical_schemes(schemes))
    return [s for s in SCHEMES if s in wanted or (not wanted and SCHEMES[s].default)]


def family(scheme: str) -> str:
    """A scheme name's family (REP for REP_R and REP_C); a name not registered is its own."""
    return SCHEMES[scheme].family if scheme in SCHEMES else scheme
