"""The order the root conftest.py gives the suite under pytest-xdist (``make test``: ``-n 3 --dist
loadfile --no-loadscope-reorder``): the longest files (its ``LONGEST_FIRST``) first in that order,
then the other files that start a JVM (a test marked ``spark``) and the notebooks, each file's tests
and each notebook's cells still in their order; a plain run keeps the collection order."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


@pytest.fixture
def root_conftest(pytestconfig: pytest.Config) -> Any:
    """The root conftest, the module pytest loaded (loading it again would give the session another
    ``$STREAMKERNEL_HOME``)."""
    for plugin in pytestconfig.pluginmanager.get_plugins():
        if getattr(plugin, "__file__", None) and Path(plugin.__file__).resolve() == ROOT_CONFTEST:
            return plugin
    raise AssertionError(f"pytest did not load {ROOT_CONFTEST}")


@pytest.fixture
def modifyitems(root_conftest: Any) -> Callable[..., None]:
    """The root conftest's hook."""
    return root_conftest.pytest_collection_modifyitems


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


def test_the_longest_files_go_first_in_their_listed_order_whatever_their_place_and_markers(
        root_conftest: Any, modifyitems: Callable[..., None]) -> None:
    first, second = root_conftest.LONGEST_FIRST[:2]
    items = _collected()
    items[5:5] = [_item(second, "second1"), _item(second, "second2")]  # between b and c, no spark marker
    items.append(_item(str(ROOT_CONFTEST.parent / first), "first1", spark=True))  # last, an absolute path
    modifyitems(None, SimpleNamespace(workerinput={}), items)
    assert [item.name for item in items] == ["first1", "second1", "second2", "b1", "b2", "b3", "Cell 0", "Cell 1",
                                             "a1", "a2", "c1"]


def test_every_file_listed_as_longest_exists(root_conftest: Any) -> None:
    """A file renamed or split without updating the list would silently lose its place."""
    listed = root_conftest.LONGEST_FIRST
    assert len(set(listed)) == len(listed)
    assert [name for name in listed if not (ROOT_CONFTEST.parent / name).is_file()] == []
