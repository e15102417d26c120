"""Forwarding objects of a TaskManager process: sinks and output that belong to the driver.

A plan's collect and pandas sinks carry only a token when they are pickled; in the driver's
process the token finds the live buffer or store. In a TaskManager process
:class:`WorkerForwarding` makes the token find a *forwarding* object instead, which calls
the driver's :class:`~.driver_services.DriverServices` over the TaskManager's RPC connection:
its :attr:`WorkerForwarding.hooks` replace the sinks' unpickling functions
(``_collect_sink``, ``_pandas_sink``) with ones that first register the forwarder under the
token. Collect writes are calls that block while the driver's buffer is full, so
backpressure holds across processes.

:class:`ForwardingStream` replaces ``sys.stdout`` / ``sys.stderr`` of the TaskManager process
(:meth:`WorkerForwarding.redirect_output`): complete lines go to the driver as tells, in
order with the task's state updates.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from typing import Any, Iterator, Optional

from streamkernel.runtime.rpc.connection import RpcConnection, RpcConnectionLostError
from streamkernel.runtime.taskmanager.driver_services import DRIVER_SERVICES

__all__ = ["WorkerForwarding", "ForwardingCollectBuffer", "ForwardingPandasStore", "ForwardingStream"]

_COLLECT = "streamkernel.datastream.connectors.collect"
_PANDAS = "streamkernel.datastream.connectors.pandas"


class ForwardingCollectBuffer:
    """A CollectBuffer's writer side in a TaskManager process: every call goes to the driver's buffer."""

    def __init__(self, rpc: RpcConnection, buffer_id: str) -> None:
        self._rpc = rpc
        self.buffer_id = buffer_id

    def _call(self, method: str, *args: Any) -> Any:
        return self._rpc.call(DRIVER_SERVICES, method, (self.buffer_id, *args), timeout=None)

    def expect_writers(self, parallelism: int) -> None:
        """Tell the driver's buffer how many sink subtasks write."""
        self._call("collect_expect_writers", parallelism)

    def put_batch(self, values: list, timeout: Optional[float] = None) -> bool:
        """Append a batch to the driver's buffer, blocking while it is full."""
        return self._call("collect_put_batch", list(values), timeout)

    def put_transaction(self, transaction_id: str, values: list, timeout: Optional[float] = None) -> bool:
        """Deliver a committed transaction to the driver's buffer (at most once)."""
        return self._call("collect_put_transaction", transaction_id, list(values), timeout)

    def writer_finished(self, subtask_index: int) -> None:
        """A sink subtask wrote everything."""
        self._call("collect_writer_finished", subtask_index)

    def __repr__(self) -> str:
        return f"ForwardingCollectBuffer({self.buffer_id[:8]})"


class _ForwardingPart:
    """One subtask's part of a pandas store, in the driver: ``extend`` sends, ``len`` counts here."""

    def __init__(self, rpc: RpcConnection, part_id: int, length: int) -> None:
        self._rpc = rpc
        self._part_id = part_id
        self._length = length

    def extend(self, values: Any) -> None:
        values = list(values)
        if values and self._part_id:
            self._rpc.tell(DRIVER_SERVICES, "pandas_extend", (self._part_id, values))
        self._length += len(values)

    def __len__(self) -> int:
        return self._length


class ForwardingPandasStore:
    """A PandasSink's store in a TaskManager process: the parts live in the driver's store."""

    def __init__(self, rpc: RpcConnection, token: str) -> None:
        self._rpc = rpc
        self._token = token

    def _call(self, method: str, *args: Any) -> Any:
        return self._rpc.call(DRIVER_SERVICES, method, (self._token, *args))

    def start(self, subtask_index: int) -> _ForwardingPart:
        """Start (or restart) a subtask's part."""
        return _ForwardingPart(self._rpc, self._call("pandas_start", subtask_index), 0)

    def resume(self, subtask_index: int, count: int) -> _ForwardingPart:
        """Restart a subtask's part from a checkpoint, cut back to ``count`` records."""
        part_id, length = self._call("pandas_resume", subtask_index, count)
        return _ForwardingPart(self._rpc, part_id, length)

    def remove(self, subtask_index: int) -> list:
        """Take a part out of the store; returns its records."""
        return self._call("pandas_remove", subtask_index)

    def records(self) -> list:
        """All records (from the driver)."""
        return self._call("pandas_records")

    def clear(self) -> None:
        """Forget every record."""
        self._call("pandas_clear")


class ForwardingStream(io.TextIOBase):
    """A text stream whose complete lines are written to the driver's ``sys.<name>``.

    Partial lines wait for their newline or a :meth:`flush`. When the connection is gone,
    text goes to ``fallback`` (the process's original stream).
    """

    def __init__(self, rpc: RpcConnection, name: str, fallback: Any) -> None:
        super().__init__()
        self._rpc = rpc
        self._name = name
        self._fallback = fallback
        self._lock = threading.Lock()  # guards _pending (tasks print from their threads)
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            cut = self._pending.rfind("\n") + 1
            if not cut:
                return len(text)
            complete, self._pending = self._pending[:cut], self._pending[cut:]
            self._send(complete)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                text, self._pending = self._pending, ""
                self._send(text)

    def _send(self, text: str) -> None:
        try:
            self._rpc.tell(DRIVER_SERVICES, "write_output", (self._name, text))
        except RpcConnectionLostError:
            try:
                self._fallback.write(text)
            except (OSError, ValueError):
                pass

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


class WorkerForwarding:
    """The forwarding objects of one TaskManager process, bound to its RPC connection.

    Build it first, pass :attr:`hooks` to the RpcConnection, then :meth:`bind` the started
    connection. Forwarders are kept (strongly) for the life of the process: the registries
    the sinks look them up in hold objects weakly.
    """

    def __init__(self) -> None:
        self._rpc: Optional[RpcConnection] = None
        self._lock = threading.Lock()  # guards _held
        self._held: dict[str, Any] = {}

    def bind(self, rpc: RpcConnection) -> None:
        """The connection forwarders call over."""
        self._rpc = rpc

    @property
    def hooks(self) -> dict[tuple[str, str], Any]:
        """Unpickle hooks for the connection: the sinks' factories, forwarder first."""
        return {(_COLLECT, "_collect_sink"): self._collect_sink, (_PANDAS, "_pandas_sink"): self._pandas_sink}

    def _collect_sink(self, buffer_id: str, capacity: int) -> Any:
        from streamkernel.datastream.connectors import collect

        with self._lock:
            if collect.get_collect_buffer(buffer_id) is None and self._rpc is not None:
                forwarder = self._held[buffer_id] = ForwardingCollectBuffer(self._rpc, buffer_id)
                collect.register_collect_buffer(forwarder, buffer_id)
        return collect._collect_sink(buffer_id, capacity)

    def _pandas_sink(self, name: str, columns: Any, token: str) -> Any:
        from streamkernel.datastream.connectors import pandas as pandas_connector

        with self._lock:
            if pandas_connector._STORES.get(token) is None and self._rpc is not None:
                forwarder = self._held[token] = ForwardingPandasStore(self._rpc, token)
                pandas_connector._STORES.register(forwarder, token)
        return pandas_connector._pandas_sink(name, columns, token)

    @contextlib.contextmanager
    def redirect_output(self) -> Iterator[None]:
        """Send this process's ``sys.stdout`` and ``sys.stderr`` to the driver while inside."""
        assert self._rpc is not None, "bind() the connection first"
        saved = sys.stdout, sys.stderr
        sys.stdout = ForwardingStream(self._rpc, "stdout", saved[0])
        sys.stderr = ForwardingStream(self._rpc, "stderr", saved[1])
        try:
            yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            sys.stdout, sys.stderr = saved
