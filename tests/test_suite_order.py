"""The order the root conftest.py gives the suite under pytest-xdist (``make test``: ``-n 2 --dist
loadfile --no-loadscope-reorder``): the files that start a JVM (a test marked ``spark``) and the
notebooks first, each file's tests and each notebook's cells still in their order; a plain run
keeps the collection order."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


@pytest.fixture
def modifyitems(pytestconfig: pytest.Config) -> Callable[..., None]:
    """The root conftest's hook, from the module pytest loaded (loading it again would give the
    session another ``$STREAMKERNEL_HOME``)."""
    for plugin in pytestconfig.pluginmanager.get_plugins():
        if getattr(plugin, "__file__", None) and Path(plugin.__file__).resolve() == ROOT_CONFTEST:
            return plugin.pytest_collection_modifyitems
    raise AssertionError(f"pytest did not load {ROOT_CONFTEST}")


def _item(path: str, name: str, spark: bool = False) -> Any:
    return SimpleNamespace(path=Path(path), name=name,
                           get_closest_marker=lambda marker: object() if spark and marker == "spark" else None)


def _collected() -> list[Any]:
    return [_item("tests/a.py", "a1"), _item("tests/a.py", "a2"),
            _item("tests/b.py", "b1"), _item("tests/b.py", "b2", spark=True), _item("tests/b.py", "b3"),
            _item("tests/c.py", "c1"),
            _item("notebooks/01.ipynb", "Cell 0"), _item("notebooks/01.ipynb", "Cell 1")]


def test_an_xdist_worker_gets_the_jvm_files_and_the_notebooks_first_in_their_own_order(
        modifyitems: Callable[..., None]) -> None:
    items = _collected()
    modifyitems(None, SimpleNamespace(workerinput={}), items)
    assert [item.name for item in items] == ["b1", "b2", "b3", "Cell 0", "Cell 1", "a1", "a2", "c1"]


def test_a_run_without_xdist_keeps_the_collection_order(modifyitems: Callable[..., None]) -> None:
    items = _collected()
    modifyitems(None, SimpleNamespace(), items)
    assert [item.name for item in items] == ["a1", "a2", "b1", "b2", "b3", "c1", "Cell 0", "Cell 1"]
