"""Where a completion ends, for code outside the backends: the public face of ``_stop``.

``cctest proxy`` asks a server for completions itself (it keeps the plugin's own request options),
and cuts each answer at its natural end exactly as the ``http`` backend does, so its repaired
completion is the one ``cctest complete --backend http`` gives.
"""

from __future__ import annotations

from ._stop import trim_completion

__all__ = ["trim_completion"]
