"""``%load_ext streamkernel``: register the magics and bind ``env`` for the user.

Loading is idempotent: ``%reload_ext streamkernel`` (or a second ``load``) replaces the
magics and their cell hooks, so each hook runs once per cell however often it was loaded.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load", "unload"]

#: The IPython events the cockpit listens to (a job a cell submits and leaves running shows its dashboard).
_EVENTS = ("pre_run_cell", "post_run_cell")


def load(ipython: Any) -> None:
    """Register :class:`FlinkMagics` on ``ipython`` and bind the notebook's ``env``."""
    from streamkernel.jupyter.magics import FlinkMagics

    _unregister_hooks(ipython)  # an earlier load's hooks would run a second time per cell
    magics = FlinkMagics(ipython)
    ipython.register_magics(magics)
    magics.session.bind()
    ipython.events.register("pre_run_cell", magics.cockpit.before_cell)
    ipython.events.register("post_run_cell", magics.cockpit.after_cell)


def unload(ipython: Any) -> None:
    """Remove the cell hooks; the magics stay registered until the kernel restarts, as IPython does."""
    _unregister_hooks(ipython)


def _unregister_hooks(ipython: Any) -> None:
    """Unregister every cockpit hook an earlier ``load`` registered (found by their owner's
    class, so hooks of a reloaded module's classes are found too)."""
    for event in _EVENTS:
        for callback in list(ipython.events.callbacks.get(event, ())):
            owner = getattr(callback, "__self__", None)
            if type(owner).__name__ == "CockpitCommands" and type(owner).__module__.startswith("streamkernel."):
                ipython.events.unregister(event, callback)
