"""streamkernel: a Jupyter-first, interactive streaming engine.

Build a Flink-style dataflow with a PyFlink-compatible DataStream API
(``streamkernel.datastream``, ``streamkernel.common``), see its StreamGraph, JobGraph and
ExecutionGraph drawn, and drive it from a notebook with ``%load_ext streamkernel`` and
the ``%%flink`` cell magic.

Importing this package is cheap: it loads neither IPython nor pandas nor PySpark; each is
imported where it is used.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext streamkernel``: register the ``%flink`` / ``%%flink`` magics and bind ``env``."""
    from streamkernel.jupyter.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext streamkernel``: nothing to undo beyond IPython's own bookkeeping."""
    from streamkernel.jupyter.extension import unload

    unload(ipython)
