"""The layers and runtime's packages import downwards only (docs/architecture.md), with no
cycle between packages, and ``import streamkernel`` stays light."""

from __future__ import annotations

import ast
import functools
import pathlib
import subprocess
import sys
from collections import defaultdict

import pytest

pytestmark = pytest.mark.py_matrix  # also run under every declared Python (scripts/test_other_pythons.sh)

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "streamkernel"

# layer -> layers it may import at module level (lazy imports inside functions are allowed:
# execute() reaches the runtime, graph reprs reach viz).
ALLOWED = {
    "common": {"common"},
    "util": {"util"},
    "graph": {"graph", "common"},
    "viz": {"viz", "graph", "common"},
    "datastream": {"datastream", "graph", "common"},
    "runtime": {"runtime", "graph", "common", "datastream"},
    "jupyter": {"jupyter", "datastream", "runtime", "viz", "graph", "common"},
}
SHARED = {"errors", "testing", "arguments", "lazy_exports"}

#: runtime's packages, bottom first: each may import (at module level) the ones before it only.
RUNTIME_ORDER = ["core", "metrics", "memory", "rpc", "state", "network", "checkpoint", "highavailability", "sources", "operators", "sinks",
                 "tasks", "taskmanager", "resourcemanager", "jobmaster", "dispatcher", "rest", "minicluster",
                 "entrypoint", "deployment"]

#: The top-level modules and what they may import at module level (entry points may import anything).
TOP_LEVEL = {
    "errors": set(),
    "lazy_exports": set(),
    "sigterm": set(),
    "arguments": {"errors"},
    "testing": {"errors", "common", "datastream", "runtime.core", "runtime.sources"},
    "state": {"errors", "common", "graph", "runtime.checkpoint", "runtime.state"},
}
ENTRY_POINTS = {"__init__", "__main__", "demo", "run_command", "kernelspec"}

#: What the runtime may import from the DataStream API (anywhere, lazily too): the contracts it
#: executes (user function classes, state and timer interfaces, windows, configuration objects),
#: the connectors and formats it reads and writes, and the result iterator it hands back. Never
#: how a program is built (DataStream, the environment, the specs' builders).
DATASTREAM_INTERFACE = {
    "checkpoint_config", "checkpointing_mode", "closeable_iterator", "count_window_assigners",
    "function_async", "function_base", "function_process", "function_window", "functions",
    "output_tag", "state", "state_backend", "state_ttl_config", "time_domain", "timerservice",
    "window_assigners", "window_triggers", "windows", "connectors", "formats",
}


def _package(module: str) -> str | None:
    """``streamkernel.runtime.jobmaster.jobmaster`` -> ``runtime.jobmaster``; ``streamkernel.graph.x`` ->
    ``graph``; a top-level module -> its name."""
    parts = module.split(".")
    if parts[0] != "streamkernel" or len(parts) < 2:
        return None
    if parts[1] == "runtime" and len(parts) >= 3 and (PACKAGE / "runtime" / parts[2]).is_dir():
        return f"runtime.{parts[2]}"
    return parts[1]


def _module_of(path: pathlib.Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts)


@functools.lru_cache(maxsize=None)
def _parsed(filename: str, text: str) -> ast.Module:
    """``text`` parsed once (three checks walk every module of the package)."""
    return ast.parse(text, filename=filename)


def _imports(path: pathlib.Path, *, lazy: bool) -> list[str]:
    """The modules ``path`` imports at module level (not under TYPE_CHECKING); with ``lazy`` also
    inside functions."""
    tree = _parsed(str(path), path.read_text())
    found: list[str] = []
    nodes = ast.walk(tree) if lazy else (
        sub for node in tree.body
        if not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
        for sub in (ast.walk(node) if isinstance(node, (ast.Import, ast.ImportFrom, ast.Try, ast.If)) else ()))
    for sub in nodes:
        if isinstance(sub, ast.Import):
            found.extend(alias.name for alias in sub.names)
        elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
            found.append(sub.module)
    return [m for m in found if m.startswith("streamkernel.")]


def _sources() -> list[tuple[str, pathlib.Path]]:
    return [(_module_of(path), path) for path in sorted(PACKAGE.rglob("*.py"))]


def _violations() -> list[str]:
    bad = []
    for module, path in _sources():
        own = _package(module)
        layer = module.split(".")[1]
        if layer in ENTRY_POINTS:
            continue
        for imported in _imports(path, lazy=False):
            target = _package(imported)
            if target is None or target == own:
                continue
            if layer in TOP_LEVEL:
                if target not in TOP_LEVEL[layer]:
                    bad.append(f"{module}: imports {imported} (top-level {layer} -> {target})")
                continue
            target_layer = target.split(".")[0]
            if target_layer in SHARED:
                continue
            if target_layer not in ALLOWED.get(layer, set()):
                bad.append(f"{module}: imports {imported} ({layer} -> {target_layer})")
            elif own.startswith("runtime.") and target.startswith("runtime."):
                mine, theirs = own.split(".")[1], target.split(".")[1]
                if RUNTIME_ORDER.index(theirs) > RUNTIME_ORDER.index(mine):
                    bad.append(f"{module}: imports {imported} (runtime.{mine} sits below runtime.{theirs})")
            elif own == "runtime" and target.startswith("runtime."):
                bad.append(f"{module}: a module directly in streamkernel/runtime/ (put it in a package)")
    return bad


def _datastream_reached_from_runtime() -> list[str]:
    bad = []
    for module, path in _sources():
        if not module.startswith("streamkernel.runtime."):
            continue
        for imported in _imports(path, lazy=True):
            parts = imported.split(".")
            if parts[:2] == ["streamkernel", "datastream"] and (len(parts) < 3 or parts[2] not in DATASTREAM_INTERFACE):
                bad.append(f"{module}: imports {imported} (not an interface module of the DataStream API)")
    return bad


def _package_cycles() -> list[list[str]]:
    """The strongly connected components (more than one package) of the package import graph."""
    edges: dict[str, set[str]] = defaultdict(set)
    for module, path in _sources():
        own = _package(module)
        for imported in _imports(path, lazy=False):
            target = _package(imported)
            if own is not None and target is not None and target != own:
                edges[own].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(set(edges) | {t for targets in edges.values() for t in targets}):
        if node not in index:
            visit(node)
    return components


def test_layers_import_downwards_only() -> None:
    assert _violations() == []


def test_no_cycle_between_packages() -> None:
    assert _package_cycles() == []


def test_the_runtime_reaches_the_datastream_api_only_through_its_interface_modules() -> None:
    assert _datastream_reached_from_runtime() == []


def test_every_runtime_package_has_a_place_in_the_order() -> None:
    packages = {p.name for p in (PACKAGE / "runtime").iterdir() if (p / "__init__.py").exists()}
    assert packages == set(RUNTIME_ORDER)
    assert sorted(p.name for p in (PACKAGE / "runtime").glob("*.py")) == ["__init__.py"]


def _fake_tree(tmp_path: pathlib.Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in files.items():
        path = tmp_path / "streamkernel" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "streamkernel")


def test_the_checker_sees_a_violation(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_tree(tmp_path, {"graph/bad.py": "from streamkernel.viz.dot import to_dot\n"}, monkeypatch)
    assert any("graph -> viz" in v for v in _violations())


def test_the_checker_sees_a_runtime_package_importing_upwards(tmp_path: pathlib.Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_tree(tmp_path, {"runtime/__init__.py": "", "runtime/taskmanager/__init__.py": "",
                          "runtime/jobmaster/__init__.py": "",
                          "runtime/taskmanager/bad.py": "from streamkernel.runtime.jobmaster.x import y\n",
                          "errors.py": "from streamkernel.common import x\n"}, monkeypatch)
    found = _violations()
    assert any("runtime.taskmanager sits below runtime.jobmaster" in v for v in found)
    assert any("top-level errors -> common" in v for v in found)


def test_the_checker_sees_a_cycle_and_a_builder_module(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_tree(tmp_path, {"runtime/__init__.py": "", "runtime/state/__init__.py": "", "runtime/core/__init__.py": "",
                          "runtime/state/a.py": "import streamkernel.runtime.core.b\n",
                          "runtime/core/b.py": "from streamkernel.runtime.state.a import c\n",
                          "runtime/core/c.py": "def f():\n    from streamkernel.datastream.data_stream import DataStream\n"},
               monkeypatch)
    assert _package_cycles() == [["runtime.core", "runtime.state"]]
    assert any("datastream.data_stream" in v for v in _datastream_reached_from_runtime())


def test_import_streamkernel_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, streamkernel, streamkernel.datastream, streamkernel.common;"
        "heavy = [m for m in ('pandas', 'pyspark', 'IPython', 'ipywidgets', 'graphviz', 'numpy') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_high_availability_services_import_kazoo_only_when_zookeeper_is_used() -> None:
    code = ("import sys, streamkernel, streamkernel.runtime.highavailability as ha;"
            "ha.create_ha_services({}).close();"
            "print('kazoo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_tests_of_the_runtime_mirror_its_packages() -> None:
    tests = pathlib.Path(__file__).resolve().parent / "runtime"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders <= set(RUNTIME_ORDER), sorted(folders - set(RUNTIME_ORDER))
