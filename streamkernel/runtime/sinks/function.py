"""Writers for user sinks: a SinkFunction (``add_sink``) and a Sink with ``create_writer`` (``sink_to``).

SinkFunction, PyFlink style: the function object's ``invoke(value, context)`` is called
per record, with one reused :class:`~streamkernel.datastream.connectors.sink_writer.SinkContext`
(``timestamp()``, ``current_watermark()``, ``current_processing_time()``). The object is
the SinkFunction itself when a subclass defines ``invoke``, else the object it wraps
(``SinkFunction(obj)``); a plain callable (``add_sink(print)`` wraps it) is called with the
record alone. ``open(runtime_context)`` and ``close()`` are called when the object has them.

A Sink of your own defines ``create_writer(runtime_context) -> SinkWriter`` (see
:mod:`streamkernel.datastream.connectors.sink_writer`): the writer's ``write_batch`` is
called per batch when it overrides it, else ``write(element, context)`` per record;
``flush(end_of_input)`` at checkpoints and at the end; ``close()`` last.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from streamkernel.datastream.connectors.base import SinkFunction
from streamkernel.datastream.connectors.sink_writer import SinkWriter
from streamkernel.errors import InvalidFunctionError
from streamkernel.runtime.operators.contexts import wrap_user_error
from streamkernel.runtime.operators.runtime_context import StreamingRuntimeContext
from streamkernel.runtime.operators.simple import failed_index
from streamkernel.runtime.sinks.base import BatchSinkWriter

__all__ = ["SinkFunctionWriter", "UserSinkWriter"]


def _invoke_target(sink: Any) -> tuple[Any, Callable[..., Any], bool]:
    """(the object with the lifecycle, the per-record callable, whether it takes a context)."""
    wrapped = sink
    if isinstance(sink, SinkFunction):
        invoke = getattr(sink, "invoke", None)
        if invoke is not None and callable(getattr(type(sink), "invoke", None)):  # a subclass defining invoke
            return sink, invoke, True
        wrapped = sink.get_java_function()
    if callable(getattr(wrapped, "invoke", None)):
        return wrapped, wrapped.invoke, True
    if callable(wrapped):
        return wrapped, wrapped, False
    raise InvalidFunctionError(
        f"sink {sink!r}: a SinkFunction needs an invoke(value, context) method, or must wrap a callable "
        f"(add_sink(lambda value: ...))")


class SinkFunctionWriter(BatchSinkWriter):
    """Calls a SinkFunction (or a wrapped callable) once per record."""

    def open(self) -> None:
        """Find the per-record callable; open the function with the runtime context."""
        self._target, self._call, self._takes_context = _invoke_target(self.sink)
        opener = getattr(self._target, "open", None)
        if callable(opener) and not isinstance(self._target, type):
            opener(StreamingRuntimeContext(self.context))

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """One call per record (the user's function is the per-record work)."""
        call = self._call
        it = iter(values)
        try:
            if not self._takes_context:
                for value in it:
                    call(value)
                return
            context = self.sink_context
            if timestamps is None:
                context._timestamp = None
                for value in it:
                    call(value, context)
            else:
                for value, timestamp in zip(it, timestamps):
                    context._timestamp = timestamp
                    call(value, context)
        except Exception as exc:
            raise wrap_user_error(self, values[failed_index(values, it)], exc) from exc

    def close(self) -> None:
        """Close the function if it has ``close``."""
        closer = getattr(getattr(self, "_target", None), "close", None)
        if callable(closer) and not isinstance(self._target, type):
            closer()


class UserSinkWriter(BatchSinkWriter):
    """Drives the SinkWriter that a user's ``Sink.create_writer(runtime_context)`` returns."""

    def open(self) -> None:
        """Create the user's writer."""
        writer = self.sink.create_writer(StreamingRuntimeContext(self.context))
        if writer is None or not (hasattr(writer, "write") or hasattr(writer, "write_batch")):
            raise InvalidFunctionError(
                f"sink {self.sink!r}: create_writer() must return a SinkWriter (with write(element, context) "
                f"or write_batch(values, timestamps)), got {writer!r}")
        self._writer = writer
        batch = getattr(type(writer), "write_batch", None)
        self._batch = writer.write_batch if batch is not None and batch is not SinkWriter.write_batch else None

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """The writer's ``write_batch``, or its ``write`` per record."""
        if self._batch is not None:
            self._batch(values, timestamps)
            return
        write, context = self._writer.write, self.sink_context
        it = iter(values)
        try:
            if timestamps is None:
                context._timestamp = None
                for value in it:
                    write(value, context)
            else:
                for value, timestamp in zip(it, timestamps):
                    context._timestamp = timestamp
                    write(value, context)
        except Exception as exc:
            raise wrap_user_error(self, values[failed_index(values, it)], exc) from exc

    def write_watermark(self, timestamp: int) -> None:
        """Tell the writer (``write_watermark``) when it has that method."""
        super().write_watermark(timestamp)
        hook = getattr(self._writer, "write_watermark", None)
        if callable(hook):
            hook(timestamp)

    def prepare_commit(self, checkpoint_id: int) -> None:
        """``flush(False)`` at a checkpoint."""
        flush = getattr(self._writer, "flush", None)
        if callable(flush):
            flush(False)
        return None

    def finish(self) -> None:
        """``flush(True)`` at the end of input."""
        flush = getattr(self._writer, "flush", None)
        if callable(flush):
            flush(True)

    def close(self) -> None:
        """The writer's ``close``."""
        closer = getattr(getattr(self, "_writer", None), "close", None)
        if callable(closer):
            closer()
