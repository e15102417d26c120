"""CloseableIterator: the results of ``execute_and_collect``, as PyFlink's ``data_stream.CloseableIterator``.

Iterating pulls the collected elements of a running (or finished) job; closing the
iterator stops the job if it still runs. Import it from
``streamkernel.datastream.data_stream`` as in PyFlink; the runtime constructs it with the
element source and a close callback.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

__all__ = ["CloseableIterator", "CollectedRecords"]


class CollectedRecords(list):
    """A list of collected results (``execute_and_collect(limit=N)``) with ``to_pandas()``."""

    def to_pandas(self, columns: Optional[Sequence[str]] = None) -> Any:
        """The records as a pandas DataFrame (tuples and lists -> columns, Rows -> named columns)."""
        from streamkernel.datastream.connectors.pandas import records_to_dataframe

        return records_to_dataframe(self, columns)


class CloseableIterator:
    """An iterator over a job's results that stops the job when closed (``with`` closes it)."""

    def __init__(self, iterator: Iterable[Any], close: Optional[Callable[[], None]] = None,
                 type_info: Any = None) -> None:
        self._iterator: Iterator[Any] = iter(iterator)
        self._close = close
        self._closed = False
        self._type_info = type_info

    def __iter__(self) -> "CloseableIterator":
        return self

    def __next__(self) -> Any:
        return self.next()

    def next(self) -> Any:
        """The next element; StopIteration when there are no more."""
        if self._closed:
            raise StopIteration("No more data.")
        try:
            return next(self._iterator)
        except StopIteration:
            raise StopIteration("No more data.") from None

    def close(self) -> None:
        """Stops the job (if still running) and releases the results; idempotent."""
        if not self._closed:
            self._closed = True
            if self._close is not None:
                self._close()

    def to_pandas(self, columns: Optional[Sequence[str]] = None) -> Any:
        """Every remaining result as a pandas DataFrame (waits for a bounded job to end), then closes."""
        try:
            return CollectedRecords(self).to_pandas(columns)
        finally:
            self.close()

    def __enter__(self) -> "CloseableIterator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
