"""What a TaskManager process asks of the driver beyond the gateways: output, results, its environment.

A job's collect and pandas sinks hold live objects of the program that built the job (the
buffer a notebook iterates over, the rows a DataFrame is built from), and a print sink or a
user's ``print`` writes to the driver's output. A TaskManager in another process has none
of these: it reaches them through :class:`DriverServices`, exported on every TaskManager's
RPC connection under :data:`DRIVER_SERVICES`, and its forwarding objects
(:mod:`.forwarding`) call it.

* output: ``write_output("stdout" | "stderr", text)`` (a tell, so it keeps its order with
  the task's state updates: a print sink's lines are written before its FINISHED arrives);
* collect: the CollectBuffer writer methods by buffer id, blocking like the buffer itself
  (backpressure reaches the remote sink);
* pandas: the store methods of a PandasSink by token; a started part is named by a part id
  so that a late write of a replaced (restarted) subtask goes nowhere, as locally it goes to
  a list nobody reads;
* ``worker_environment()``: the driver's ``sys.path`` and working directory, so a
  TaskManager imports the user's modules the way the driver does.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from typing import Any, Optional

__all__ = ["DriverServices", "DRIVER_SERVICES", "RESOURCE_MANAGER"]

#: The export names on a TaskManager's RPC connection (JobManager side).
DRIVER_SERVICES = "driver"
RESOURCE_MANAGER = "resource_manager"


def _collect_buffer(buffer_id: str) -> Any:
    from streamkernel.datastream.connectors.collect import get_collect_buffer

    return get_collect_buffer(buffer_id)


def _pandas_store(token: str) -> Any:
    from streamkernel.datastream.connectors import pandas as pandas_connector

    return pandas_connector._STORES.get(token)  # the sink's registry of live stores (by token)


class DriverServices:
    """The driver's side of TaskManager output, collect buffers and pandas stores (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards _parts and _current_part
        self._part_ids = itertools.count(1)
        self._parts: dict[int, list] = {}
        self._current_part: dict[tuple[str, int], int] = {}

    # ------------------------------------------------------------------ environment
    def worker_environment(self) -> dict[str, Any]:
        """The driver's ``sys.path`` and working directory."""
        return {"sys_path": list(sys.path), "cwd": os.getcwd()}

    def write_output(self, stream: str, text: str) -> None:
        """Write a TaskManager's output to this process's ``sys.stdout`` / ``sys.stderr`` (looked up now)."""
        target = sys.stderr if stream == "stderr" else sys.stdout
        target.write(text)
        target.flush()

    # ---------------------------------------------------------------------- collect
    def collect_expect_writers(self, buffer_id: str, parallelism: int) -> None:
        """``CollectBuffer.expect_writers`` (a gone buffer is ignored)."""
        buffer = _collect_buffer(buffer_id)
        if buffer is not None:
            buffer.expect_writers(parallelism)

    def collect_put_batch(self, buffer_id: str, values: list, timeout: Optional[float] = None) -> bool:
        """``CollectBuffer.put_batch``: blocks while the buffer is full; True if a gone buffer dropped it."""
        buffer = _collect_buffer(buffer_id)
        return True if buffer is None else buffer.put_batch(values, timeout)

    def collect_put_transaction(self, buffer_id: str, transaction_id: str, values: list,
                                timeout: Optional[float] = None) -> bool:
        """``CollectBuffer.put_transaction`` (blocks like put_batch)."""
        buffer = _collect_buffer(buffer_id)
        return True if buffer is None else buffer.put_transaction(transaction_id, values, timeout)

    def collect_writer_finished(self, buffer_id: str, subtask_index: int) -> None:
        """``CollectBuffer.writer_finished``."""
        buffer = _collect_buffer(buffer_id)
        if buffer is not None:
            buffer.writer_finished(subtask_index)

    # ----------------------------------------------------------------------- pandas
    def _new_part(self, token: str, subtask_index: int, part: list) -> int:
        with self._lock:
            part_id = next(self._part_ids)
            old = self._current_part.get((token, subtask_index))
            if old is not None:
                self._parts.pop(old, None)
            self._current_part[(token, subtask_index)] = part_id
            self._parts[part_id] = part
        return part_id

    def pandas_start(self, token: str, subtask_index: int) -> int:
        """``start`` a subtask's part of the store; returns its part id (0: the sink is gone)."""
        store = _pandas_store(token)
        return 0 if store is None else self._new_part(token, subtask_index, store.start(subtask_index))

    def pandas_resume(self, token: str, subtask_index: int, count: int) -> tuple[int, int]:
        """``resume`` a subtask's part cut back to ``count`` records; returns (part id, its length)."""
        store = _pandas_store(token)
        if store is None:
            return 0, 0
        part = store.resume(subtask_index, count)
        return self._new_part(token, subtask_index, part), len(part)

    def pandas_remove(self, token: str, subtask_index: int) -> list:
        """``remove`` a subtask's part; returns its records."""
        store = _pandas_store(token)
        return [] if store is None else list(store.remove(subtask_index))

    def pandas_extend(self, part_id: int, values: list) -> None:
        """Append to a part (a replaced part takes nothing any more)."""
        with self._lock:
            part = self._parts.get(part_id)
        if part is not None:
            part.extend(values)

    def pandas_records(self, token: str) -> list:
        """Every record of the store."""
        store = _pandas_store(token)
        return [] if store is None else store.records()

    def pandas_clear(self, token: str) -> None:
        """Forget the store's records."""
        store = _pandas_store(token)
        if store is not None:
            store.clear()
