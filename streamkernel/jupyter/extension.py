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
    # a job a cell submits and leaves running (env.execute_async()) shows its dashboard
    ipython.events.register("pre_run_cell", magics.cockpit.before_cell)
    ipython.events.register("post_run_cell", magics.cockpit.after_cell)


def unload(ipython: Any) -> None:
    """Nothing to release: the magics stay registered until the kernel restarts, as IPython does."""
