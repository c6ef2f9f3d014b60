"""Checks the arguments of `cctest/defects`, `cctest.exportDefects` and `cctest.accepted`, and runs
the first two on the log."""

from __future__ import annotations

import asyncio
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from cctest.defects import EXPORT_FORMATS, DefectRecord, DefectStore, normalise_time
from cctest.errors import DefectLogError


def plain(value: Any) -> Any:
    """JSON values as pygls hands them to custom handlers (objects become namedtuples) -> dicts."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _params(params: Any) -> dict[str, Any]:
    """Custom requests' params: an object or nothing; anything else is bad."""
    params = plain(params)
    if params is None:
        return {}
    if isinstance(params, dict):
        return params
    raise JsonRpcInvalidParams(message="params must be an object.")


def _int_param(params: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = params.get(name, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise JsonRpcInvalidParams(message=f"'{name}' must be an integer from {low} to {high}.")
    return value


def list_query(params: Any) -> dict[str, Any]:
    """``cctest/defects`` params -> keyword arguments of ``DefectStore.list``."""
    p = _params(params)
    limit = _int_param(p, "limit", 50, 1, 1000)
    offset = _int_param(p, "offset", 0, 0, 2**62)
    uri, since = p.get("uri"), p.get("since")
    if uri is not None and not isinstance(uri, str):
        raise JsonRpcInvalidParams(message="'uri' must be a string.")
    if since is not None and not isinstance(since, (str, int, float)):
        raise JsonRpcInvalidParams(message="'since' must be ISO 8601 text or Unix seconds.")
    return {"limit": limit, "offset": offset, "uri": uri, "since": since}


async def list_records(store: DefectStore, query: dict[str, Any]) -> tuple[list[DefectRecord], int]:
    """Run a ``list_query`` on the log off the event loop; a log error is a bad request."""
    since = query["since"]
    try:
        return await asyncio.to_thread(
            store.list, **{**query, "since": None if since is None else normalise_time(since)}
        )
    except DefectLogError as exc:
        raise JsonRpcInvalidParams(message=str(exc)) from exc


def export_target(args: tuple[Any, ...]) -> tuple[str, str]:
    """``[path, format]`` or ``[{"path": ..., "format": "jsonl"|"csv"}]`` -> (path, format)."""
    args = tuple(plain(a) for a in args)
    if len(args) == 1 and isinstance(args[0], dict):
        path, fmt = args[0].get("path"), args[0].get("format", "jsonl")
    else:
        path, fmt = (list(args) + [None, "jsonl"])[:2]
    if not isinstance(path, str) or not path:
        raise JsonRpcInvalidParams(message="cctest.exportDefects needs a file path.")
    if fmt not in EXPORT_FORMATS:
        raise JsonRpcInvalidParams(message="the format must be jsonl or csv.")
    return path, fmt


def accepted_argument(args: tuple[Any, ...]) -> Any:
    """``cctest.accepted``'s one argument: a request id or a record id (checked by the recorder)."""
    if len(args) != 1:
        raise JsonRpcInvalidParams(
            message="cctest.accepted takes one argument: the request id or the record id."
        )
    return plain(args[0])


async def export(store: DefectStore, path: str, fmt: str) -> int:
    """Write the log to ``path`` off the event loop; a log error is a bad request."""
    try:
        return await asyncio.to_thread(store.export_to, path, fmt)
    except DefectLogError as exc:
        raise JsonRpcInvalidParams(message=str(exc)) from exc
