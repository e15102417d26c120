"""RuntimeExecutionMode: how a job runs, as ``pyflink.datastream.execution_mode``."""

from __future__ import annotations

from enum import Enum

__all__ = ["RuntimeExecutionMode"]


class RuntimeExecutionMode(Enum):
    """The runtime execution mode of a job (key ``execution.runtime-mode``, value = the name).

    - ``STREAMING``: continuous, incremental processing with watermarks and checkpoints
      (the default; works for bounded and unbounded sources).
    - ``BATCH``: for bounded inputs only; results are produced once per key at the end.
    - ``AUTOMATIC``: BATCH if every source is bounded, else STREAMING.
    """

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2
