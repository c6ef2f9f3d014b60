"""Deciding early over streamed completions, for code outside the backends: the public face of
``_streams`` (and of the ``BoundaryStopper`` each streamed row is cut with).

``cctest proxy`` streams the rows of a repair from the model server itself (it keeps the plugin's
own request options) and decides over them exactly as ``HTTPBackend.complete_deciding`` does.
"""

from __future__ import annotations

from ._stop import BoundaryStopper
from ._streams import (
    INFILL_STREAM,
    STREAM_FORMATS,
    Row,
    Streamed,
    StreamRefused,
    decide_over_streams,
    events,
    hold,
    interrupted,
    is_stream,
    without_stop,
)

__all__ = [
    "INFILL_STREAM",
    "STREAM_FORMATS",
    "BoundaryStopper",
    "Row",
    "StreamRefused",
    "Streamed",
    "decide_over_streams",
    "events",
    "hold",
    "interrupted",
    "is_stream",
    "without_stop",
]
