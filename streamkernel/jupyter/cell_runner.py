"""Run the Python of a ``%%flink`` cell in the user's namespace, with the user's tracebacks.

The cell is transformed like any IPython cell (so ``!cmd`` and ``%magics`` work inside)
and compiled under IPython's cell file name, so a traceback reads ``Cell In[7], line 3``
and points at the user's own line. Frames of this module and the magic are marked with
``__tracebackhide__`` so IPython leaves them out of what the user sees.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_cell_code"]


def run_cell_code(shell: Any, cell: str) -> None:
    """Execute ``cell`` in ``shell.user_ns``; exceptions propagate with the user's frames."""
    __tracebackhide__ = True  # noqa: F841 - read by IPython's traceback formatter
    transformed = shell.transform_cell(cell)
    filename = shell.compile.cache(transformed, shell.execution_count, raw_code=cell)
    code = compile(transformed, filename, "exec")
    exec(code, shell.user_ns)  # noqa: S102 - running the user's own cell is the point
