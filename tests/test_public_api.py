"""The public API does not move: docs/public-api.md lists it, and what the README, the docs and the
notebooks import is on that list and imports (issue 31).

Every import statement of the list, of ``README.md``, ``docs/*.md`` (fenced Python blocks and inline
code) and of the notebooks' code cells runs in one fresh interpreter of this checkout; an import of
the README, docs or notebooks must be of a listed (module, name), or of PyFlink's API under the
``streamkernel.`` prefix (``streamkernel.datastream`` / ``streamkernel.common`` and their modules,
checked against PyFlink's own list by tests/test_pyflink_surface.py).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PUBLIC_API = REPO / "docs" / "public-api.md"
PYFLINK_PREFIXES = ("streamkernel.datastream", "streamkernel.common")
TIMEOUT_S = 180  # importing pandas, the runtime and the REST client: seconds on a loaded machine

_FENCED = re.compile(r"```python\n(.*?)```", re.S)
_INLINE = re.compile(r"`((?:from|import) streamkernel[^`]*)`")


@dataclass(frozen=True)
class Import:
    """One import statement: where it is written, its source, the module and the names it imports
    (``*``: every name of ``__all__``; empty for ``import module``)."""

    where: str
    source: str
    module: str
    names: tuple[str, ...]


def _imports(code: str, where: str) -> list[Import]:
    """The absolute ``streamkernel`` imports of ``code`` (every statement, nested ones too)."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("streamkernel"):
            found.append(Import(where, ast.unparse(node), str(node.module), tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "streamkernel":
                    found.append(Import(where, f"import {alias.name}", alias.name, ()))
    return found


def _markdown_imports(path: Path) -> list[Import]:
    text = path.read_text(encoding="utf-8")
    where = str(path.relative_to(REPO))
    found = [i for block in _FENCED.findall(text) for i in _imports(_python_of_cell(block), where)]
    return found + [i for span in _INLINE.findall(text) for i in _imports(span, where)]


def _python_of_cell(source: str) -> str:
    """A code cell as Python: a cell magic's first line dropped, line magics and shell escapes as ``pass``."""
    lines = source.splitlines()
    if lines and lines[0].startswith("%%"):
        lines = lines[1:]
    return "\n".join(re.sub(r"^(\s*)[%!].*$", r"\1pass", line) for line in lines)


def _notebook_imports(path: Path) -> list[Import]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = []
    for number, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            found += _imports(_python_of_cell("".join(cell["source"])), f"{path.relative_to(REPO)} cell {number}")
    return found


def listed_imports() -> list[Import]:
    """The import statements of docs/public-api.md."""
    return _markdown_imports(PUBLIC_API)


def used_imports() -> list[Import]:
    """The streamkernel imports of the README, the other docs and the notebooks."""
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    found = [i for path in docs if path != PUBLIC_API for i in _markdown_imports(path)]
    return found + [i for path in sorted((REPO / "notebooks").glob("*.ipynb")) for i in _notebook_imports(path)]


_RUNNER = textwrap.dedent("""
    import importlib, json, sys
    results = {}
    for source, module in json.loads(sys.stdin.read()):
        try:
            exec(source, {})
            results[source] = {"ok": True, "all": list(getattr(importlib.import_module(module), "__all__", []))}
        except BaseException as error:  # noqa: BLE001 - reported per statement
            results[source] = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    print(json.dumps(results))
""")


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict]:
    """source -> {"ok", "all": the module's __all__} or {"ok": False, "error"}, for every statement, run in a
    fresh interpreter of this checkout."""
    statements = {i.source: i.module for i in [*listed_imports(), *used_imports()]}
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(list(statements.items())), cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_every_import_of_the_public_api_list_works(outcomes: dict[str, dict]) -> None:
    listed = listed_imports()
    assert len(listed) > 20 and any(i.source == "from streamkernel.runtime.minicluster import *" for i in listed)
    failures = {i.source: outcomes[i.source]["error"] for i in listed if not outcomes[i.source]["ok"]}
    assert failures == {}


def test_every_import_of_the_readme_docs_and_notebooks_works(outcomes: dict[str, dict]) -> None:
    used = used_imports()
    assert any(i.where.startswith("notebooks/") for i in used) and any(i.where == "README.md" for i in used)
    failures = [f"{i.where}: {i.source}: {outcomes[i.source]['error']}" for i in used if not outcomes[i.source]["ok"]]
    assert failures == []


def test_the_readme_docs_and_notebooks_import_only_what_the_list_names(outcomes: dict[str, dict]) -> None:
    public: dict[str, set[str]] = {}
    for statement in listed_imports():
        names = public.setdefault(statement.module, set())
        names.update(outcomes[statement.source].get("all", []) if statement.names == ("*",) else statement.names)
    unlisted = []
    for i in used_imports():
        if i.module.startswith(PYFLINK_PREFIXES) or i.module == "streamkernel" and not i.names:
            continue
        missing = [name for name in i.names if name not in public.get(i.module, ())] if i.names else \
            ([] if i.module in public else [i.module])
        if missing:
            unlisted.append(f"{i.where}: {i.source} ({', '.join(missing)} not in docs/public-api.md)")
    assert unlisted == []


def test_the_old_path_of_the_minicluster_works_again_and_import_streamkernel_stays_light() -> None:
    code = ("import sys, streamkernel\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('streamkernel'))\n"
            "from streamkernel.runtime.minicluster import MiniCluster\n"
            "from streamkernel import MiniCluster as Short\n"
            "from streamkernel.runtime.minicluster.minicluster import MiniCluster as Long\n"
            "print(loaded, MiniCluster is Short is Long)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['streamkernel', 'streamkernel.lazy_exports'] True"  # the face's helper only
