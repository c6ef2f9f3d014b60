"""The mutation schemes (CCTest's nine, FORM, FMT, CMP, LOOP and DOC) and the entry points that apply them.

A façade: each part lives in its own module, and this one only names the public API.

- ``registry``: ``SCHEMES`` (one line per scheme), the default ones, the parser of scheme names;
- one module per scheme (``rep``, ``rel``, ``irr``, ``rtf``, ``gra``, ``ini``, ``form``, ``fmt``,
  ``cmp``, ``loop``, ``doc``): its site visitor, its rewrite, its variants (``base.Scheme``);
- ``generate``: ``generate_mutants`` (k mutants of the text before a cursor, cached per window)
  and ``mutate_whole`` (one scheme at every site of a file), over ``analyse`` (one parse, one
  batched pass of the schemes' site visitors: ``_walk``);
- ``selection``: which variants are tried first (variety, nearest the cursor, sparing a suffix);
- the shared analysis: ``_analysis`` (scopes and facts, with ``ast``), ``_walk`` (the batched site
  pass), ``_sites`` (libcst helpers), ``_rename``, ``_insert``, ``_distance``.
"""

from __future__ import annotations

from ._analysis import analyse_functions
from .base import Scheme
from .generate import MutationOutcome, analyse, generate_mutants, mutate_whole
from .registry import DEFAULT_SCHEMES, SCHEMES, canonical_schemes, scheme_names
from .selection import nearest_the_cursor, used_names

__all__ = [
    "SCHEMES",
    "DEFAULT_SCHEMES",
    "MutationOutcome",
    "analyse",
    "analyse_functions",
    "generate_mutants",
    "mutate_whole",
    "nearest_the_cursor",
    "used_names",
    "Scheme",
    "canonical_schemes",
    "scheme_names",
]
