"""``%load_ext streamkernel``: register the magics and bind ``env`` for the user."""

from __future__ import annotations

from typing import Any

__all__ = ["load", "unload"]


def load(ipython: Any) -> None:
    """Register :class:`FlinkMagics` on ``ipython`` and bind the notebook's ``env``."""
    from streamkernel.jupyter.magics import FlinkMagics

    magics = FlinkMagics(ipython)
    ipython.register_magics(magics)
    magics.session.bind()


def unload(ipython: Any) -> None:
    """Nothing to release: the magics stay registered until the kernel restarts, as IPython does."""
