"""How many rows a completion server runs side by side, for code outside the backends: the public
face of ``_slots``.

``cctest proxy`` asks the server it stands in front of itself, and answers a repair in monitor mode
where fewer rows fit than a repair asks.
"""

from __future__ import annotations

from ._slots import MORE_SLOTS, Slots, overflowed

__all__ = ["MORE_SLOTS", "Slots", "overflowed"]
