"""The data_stream and functions modules expose PyFlink's names and methods (pyflink-api.json)."""

from __future__ import annotations

import importlib
import inspect
import json
import pathlib

import pytest

pytestmark = pytest.mark.py_matrix  # also run under every declared Python (scripts/test_other_pythons.sh)

API_FILE = pathlib.Path(__file__).resolve().parents[3] / "shared" / "pyflink-api.json"
MODULES = ["data_stream", "functions"]


def _pyflink_api() -> dict:
    if not API_FILE.exists():
        pytest.skip(f"{API_FILE} not found (shared/ is beside the repository in CI and on developer machines)")
    return json.loads(API_FILE.read_text())


@pytest.mark.parametrize("module", MODULES)
def test_every_pyflink_name_and_method_exists(module: str) -> None:
    expected = _pyflink_api()[f"pyflink.datastream.{module}"]
    ours = importlib.import_module(f"streamkernel.datastream.{module}")
    missing = []
    for name, methods in expected.items():
        obj = getattr(ours, name, None)
        if obj is None:
            missing.append(name)
            continue
        missing.extend(f"{name}.{m}" for m in methods if not hasattr(obj, m))
    assert missing == []


@pytest.mark.parametrize("module", MODULES)
def test_all_lists_only_importable_names(module: str) -> None:
    ours = importlib.import_module(f"streamkernel.datastream.{module}")
    for name in ours.__all__:
        assert getattr(ours, name) is not None, name


@pytest.mark.parametrize("module", ["data_stream", "keyed_stream", "windowed_stream", "connected_streams",
                                    "functions", "function_base", "function_process", "function_window",
                                    "function_async", "function_wrappers", "stream_operator", "operator_specs",
                                    "closeable_iterator"])
def test_public_names_have_docstrings(module: str) -> None:
    ours = importlib.import_module(f"streamkernel.datastream.{module}")
    assert ours.__doc__
    undocumented = []
    for name in getattr(ours, "__all__", []):
        obj = getattr(ours, name)
        if getattr(obj, "__module__", None) != ours.__name__:
            continue
        if not inspect.getdoc(obj):
            undocumented.append(name)
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if not attr.startswith("_") and callable(value) and not inspect.getdoc(value):
                    undocumented.append(f"{name}.{attr}")
    assert undocumented == []


def test_keyed_stream_keeps_pyflinks_method_signatures() -> None:
    from streamkernel.datastream.data_stream import DataStream, KeyedStream

    assert list(inspect.signature(DataStream.key_by).parameters) == ["self", "key_selector", "key_type"]
    assert list(inspect.signature(KeyedStream.count_window).parameters) == ["self", "size", "slide"]
    assert list(inspect.signature(KeyedStream.sum).parameters) == ["self", "position_to_sum"]
    assert list(inspect.signature(DataStream.execute_and_collect).parameters) == [
        "self", "job_execution_name", "limit"]
