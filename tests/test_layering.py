"""The layers import downwards only (DESIGN.md), and ``import streamkernel`` stays light."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.py_matrix  # also run under every declared Python (scripts/test_other_pythons.sh)

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "streamkernel"

# layer -> layers it may import at module level (lazy imports inside functions are allowed:
# execute() reaches the runtime, graph reprs reach viz).
ALLOWED = {
    "common": {"common"},
    "graph": {"graph", "common"},
    "viz": {"viz", "graph", "common"},
    "datastream": {"datastream", "graph", "common"},
    "runtime": {"runtime", "graph", "common", "datastream"},
    "jupyter": {"jupyter", "datastream", "runtime", "viz", "graph", "common"},
}
SHARED = {"errors", "testing", "arguments"}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "streamkernel" or len(parts) < 2:
        return None
    return parts[1]


def _module_level_imports(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if isinstance(node, (ast.Import, ast.ImportFrom, ast.Try, ast.If)) else ():
            if isinstance(sub, ast.Import):
                found.extend(alias.name for alias in sub.names)
            elif isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                found.append(sub.module)
    return found


def _violations() -> list[str]:
    bad = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        own = _layer(".".join(rel.parts))
        if own not in ALLOWED:
            continue
        for imported in _module_level_imports(path):
            target = _layer(imported)
            if target is None or target in SHARED:
                continue
            if target not in ALLOWED[own]:
                bad.append(f"{rel}: imports {imported} ({own} -> {target})")
    return bad


def test_layers_import_downwards_only() -> None:
    assert _violations() == []


def test_the_checker_sees_a_violation(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "streamkernel" / "graph"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("from streamkernel.viz.dot import to_dot\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "streamkernel")
    assert any("graph -> viz" in v for v in _violations())


def test_import_streamkernel_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, streamkernel, streamkernel.datastream, streamkernel.common;"
        "heavy = [m for m in ('pandas', 'pyspark', 'IPython', 'ipywidgets', 'graphviz', 'numpy') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
