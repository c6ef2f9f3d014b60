"""How many rows a completion server runs side by side, where it says so.

llama.cpp's server (``llama-server``, also inside llamafile and LM Studio) runs a fixed number of
slots (``-np``, 4 by default, sharing one context); a repair's k + 1 rows beyond them wait, or
overflow the shared context and fail ("Context size has been exceeded"). It tells its slot count
and each slot's context at ``GET /props`` (``total_slots``, ``default_generation_settings.n_ctx``).
vLLM and TGI batch every request by themselves; Ollama runs ``OLLAMA_NUM_PARALLEL`` requests per
model and does not say how many.

The server is asked only once its answers show it is llama.cpp's (every final answer of it carries
``timings``) or a row failed for the context (``noted_failure``), so other servers get no extra
request; then at most once a minute, since the server may be restarted with other settings.

The slots alone do not say how many rows fit: llama.cpp's server's default slots share one context
(each slot's ``n_ctx`` is then the whole of it), which a few long rows overflow. So when rows fail
for the context, the rows that did not are what fits (``measured``); that holds for a minute, and
then a repair tries all its rows side by side again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import aiohttp
from yarl import URL

ASK_EVERY_S = 60.0  # a server's answer is kept this long
MORE_SLOTS = (
    "give the server a slot per row for repairs to run side by side: llama-server -np N "
    "(with -c N times the context a row needs), OLLAMA_NUM_PARALLEL=N for Ollama, "
    "the parallel requests setting of LM Studio's server"
)


def overflowed(message: str) -> bool:
    """Whether an error is a server's context running out (llama.cpp's server when its slots
    share a context that the rows together overflow, or one row's prompt is too long)."""
    low = message.lower()
    return "context size" in low or "context length" in low or "exceed_context" in low


class Slots:
    """What one server said of its slots (``ask``), and whether it is worth asking (``notice``)."""

    def __init__(self) -> None:
        self.total: int | None = None  # rows side by side; None: not known
        self.n_ctx: int | None = None  # each slot's context, in tokens
        self.wanted = False
        self.llama = False  # the server answered /props as llama.cpp's does
        self._asked_at: float | None = None
        self._told: int | None = None  # the slot count a line was logged for
        self._fits: int | None = None  # rows that ran side by side without overflowing (``measured``)
        self._fits_at = 0.0

    def notice(self, data: Any) -> None:
        """An answer (or stream event) of the server: llama.cpp's carries ``timings``."""
        if isinstance(data, dict) and "timings" in data:
            self.wanted = True

    def noted_failure(self, message: str) -> None:
        if overflowed(message):
            self.wanted = True

    def measured(self, ok: int) -> None:
        """Rows side by side overflowed the server's context and ``ok`` of them did not."""
        fits = max(1, ok)
        self._fits = fits if self.total is None else min(fits, self.total)
        self._fits_at = asyncio.get_running_loop().time()

    @property
    def at_once(self) -> int | None:
        """Rows the server runs side by side without failing, as far as is known (None: no bound)."""
        if self._fits is not None and asyncio.get_running_loop().time() - self._fits_at < ASK_EVERY_S:
            return self._fits
        return self.total

    def due(self) -> bool:
        now = asyncio.get_running_loop().time()
        return self.wanted and (self._asked_at is None or now - self._asked_at >= ASK_EVERY_S)

    async def ask(
        self, session: aiohttp.ClientSession, url: URL, headers: Mapping[str, str], wait: float = 2.0
    ) -> int | None:
        """``GET /props`` at ``url`` (the server's base), waiting ``wait`` seconds at most: its
        ``total_slots`` and a slot's ``n_ctx``; a server that does not answer them leaves them
        unknown. One that does is llama.cpp's (``llama``), asked again when ``due``."""
        self._asked_at = asyncio.get_running_loop().time()
        props_url = url.with_path(url.path.rstrip("/") + "/props")
        try:
            async with asyncio.timeout(max(0.001, wait)):
                async with session.get(props_url, headers=headers) as resp:
                    data = json.loads(await resp.content.read(1024 * 1024)) if resp.status == 200 else None
        except (aiohttp.ClientError, TimeoutError, ValueError, RecursionError):
            data = None
        props = data if isinstance(data, dict) else {}
        total = props.get("total_slots")
        self.total = total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else None
        settings = props.get("default_generation_settings")
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        self.n_ctx = n_ctx if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0 else None
        self.llama = self.total is not None and isinstance(settings, dict)
        self.wanted = self.wanted or self.llama
        return self.total

    def tell(self, rows: int) -> bool:
        """True once for each slot count fewer than ``rows``: the caller logs its one line then."""
        at_once = self.at_once
        if at_once is None or at_once >= rows or self._told == at_once:
            return False
        self._told = at_once
        return True


__all__ = ["MORE_SLOTS", "Slots", "overflowed"]
