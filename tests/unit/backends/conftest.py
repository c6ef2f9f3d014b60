"""One bundled model for every backend test of this directory (loading it once keeps them fast)."""

from __future__ import annotations

import pytest

from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend


@pytest.fixture(scope="session")
def hf_model() -> HFBackend:
    """The bundled model, greedy, 32 new tokens; tests derive views with ``with_options``.

    One torch thread: on a machine shared with other jobs, a team of spinning threads is far
    slower than one (the tests measured 30 times slower on a busy 2-core machine)."""
    return HFBackend(None, options=GenerationOptions(max_new_tokens=32), threads=1)
