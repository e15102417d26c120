"""MemorySize: a number of bytes, viewable in binary units (as PyFlink's and Flink's MemorySize).

The class lives in :mod:`streamkernel.common.memory_size` (the runtime's memory model computes
with it); it is re-exported here, where PyFlink's ``pyflink.datastream`` has it.
"""

from __future__ import annotations

from streamkernel.common.memory_size import MemorySize

__all__ = ["MemorySize"]
