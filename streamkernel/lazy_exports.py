"""A package face whose names are imported on first use (PEP 562's module ``__getattr__``).

``import streamkernel`` must stay cheap, yet ``from streamkernel import MiniCluster`` must work:
a package lists what it re-exports and from where, and :func:`lazy_exports` gives it the
module-level ``__getattr__`` and ``__dir__`` that import each name when it is first asked for
(and keep it, so the next access is an ordinary global)::

    __getattr__, __dir__ = lazy_exports(__name__, {"MiniCluster": ".minicluster"})

A module path that starts with ``.`` is relative to the package.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` serving ``exports`` (name -> module)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
