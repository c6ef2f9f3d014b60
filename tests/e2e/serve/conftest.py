"""One bundled model for every ``cctest serve`` test of this directory (loaded once)."""

from __future__ import annotations

import pytest

from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend


@pytest.fixture(scope="session")
def model() -> HFBackend:
    return HFBackend(None, options=GenerationOptions(max_new_tokens=24), threads=1)
