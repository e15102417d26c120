"""One registry style for what the runtime runs: a table from a class name to "module:Class".

The operator factory (spec class -> operator class), the source readers (Source class ->
reader class) and the sink writers (Sink class -> writer class) each keep such a table; the
classes they name are imported on first use, so importing the runtime stays light.
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping, Optional

__all__ = ["lookup", "resolve"]


def lookup(table: Mapping[str, str], obj: Any, module_prefix: str) -> Optional[str]:
    """The entry of ``table`` for ``obj``: that of the first class of its MRO named in ``table``
    and defined under ``module_prefix`` (so a subclass of a known class gets its entry); None
    when there is none."""
    for cls in type(obj).__mro__:
        target = table.get(cls.__name__)
        if target is not None and cls.__module__.startswith(module_prefix):
            return target
    return None


def resolve(target: str) -> Any:
    """The object named by ``target`` ("package.module:Name"), importing its module."""
    module_name, _, name = target.partition(":")
    return getattr(importlib.import_module(module_name), name)
