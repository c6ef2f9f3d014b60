"""Unit tests for lsp_server.defect_queries with plain inputs and a real DefectStore."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from cctest.defects import DefectStore
from lsp_server import defect_queries


def test_list_query_defaults_and_bounds() -> None:
    assert defect_queries.list_query(None) == {"limit": 50, "offset": 0, "uri": None, "since": None}
    with pytest.raises(JsonRpcInvalidParams):
        defect_queries.list_query({"limit": 0})
    with pytest.raises(JsonRpcInvalidParams):
        defect_queries.list_query({"uri": 5})
    with pytest.raises(JsonRpcInvalidParams):
        defect_queries.list_query([1])


def test_export_target_forms() -> None:
    assert defect_queries.export_target(("/tmp/x.csv", "csv")) == ("/tmp/x.csv", "csv")
    assert defect_queries.export_target(({"path": "/tmp/x"},)) == ("/tmp/x", "jsonl")
    with pytest.raises(JsonRpcInvalidParams):
        defect_queries.export_target(("/tmp/x", "xml"))
    with pytest.raises(JsonRpcInvalidParams):
        defect_queries.export_target(())


def test_list_and_export_on_an_empty_log(tmp_path: Path) -> None:
    store = DefectStore(tmp_path / "defects.db")
    query = defect_queries.list_query({"since": 0})
    assert asyncio.run(defect_queries.list_records(store, query)) == ([], 0)
    out = tmp_path / "out.jsonl"
    assert asyncio.run(defect_queries.export(store, str(out), "jsonl")) == 0
    with pytest.raises(JsonRpcInvalidParams):
        asyncio.run(defect_queries.list_records(store, defect_queries.list_query({"since": "not a time"})))
    store.close()
