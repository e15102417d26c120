"""CloseableIterator: the results of ``execute_and_collect``, as PyFlink's ``data_stream.CloseableIterator``.

Iterating pulls the collected elements of a running (or finished) job; closing the
iterator stops the job if it still runs. Import it from
``streamkernel.datastream.data_stream`` as in PyFlink; the runtime constructs it with the
element source and a close callback.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

__all__ = ["CloseableIterator", "CollectedRecords"]


class CollectedRecords(list):
    """A list of collected results (``execute_and_collect(limit=N)``) with ``to_pandas()``."""

    def to_pandas(self, columns: Optional[Sequence[str]] = None) -> Any:
        """The records as a pandas DataFrame (tuples and lists -> columns, Rows -> named columns)."""
        from streamkernel.datastream.connectors.pandas import records_to_dataframe

        return records_to_dataframe(self, columns)


class CloseableIterator:
    """An iterator over a job's results that stops the job when closed (``with`` closes it).

    The records arrive in batches (``batches``: an iterable of lists, e.g. a collect
    buffer's), and iterating hands them out without a Python call per record:
    ``iter(it)`` is a C-level iterator (``itertools.chain``) over the current batch and
    the ones after it, so ``for x in it`` only calls back into Python once per batch;
    ``next(it)`` and ``it.next()`` take from the same position. ``list(it)`` and
    ``to_pandas()`` take the rest of the current batch and then whole batches. Closing
    empties the current batch, so a loop that closes the iterator gets nothing more.
    """

    def __init__(self, iterator: Iterable[Any] = (), close: Optional[Callable[[], None]] = None,
                 type_info: Any = None, batches: Optional[Iterable[list]] = None) -> None:
        self._batches: Iterator[list] = iter(batches) if batches is not None else _one_record_batches(iterator)
        self._batch: list = []  # the batch being handed out (emptied on close)
        self._current: Iterator[Any] = iter(self._batch)  # the position in it
        self._close = close
        self._closed = False
        self._type_info = type_info
        self._records: Iterator[Any] = itertools.chain.from_iterable(self._feed())
        self._next_record = self._records.__next__

    def _feed(self) -> Iterator[Iterator[Any]]:
        # what the chain iterates: the current batch's iterator, then each next batch's
        yield self._current
        for batch in self._batches:
            if self._closed:
                return
            self._batch = batch
            self._current = iter(batch)
            yield self._current

    def __iter__(self) -> Iterator[Any]:
        return self._records

    def __next__(self) -> Any:
        try:
            return self._next_record()
        except StopIteration:
            raise StopIteration("No more data.") from None

    def next(self) -> Any:
        """The next element; StopIteration when there are no more."""
        return self.__next__()

    def close(self) -> None:
        """Stops the job (if still running) and releases the results; idempotent."""
        if not self._closed:
            self._closed = True
            self._batch.clear()
            if self._close is not None:
                self._close()

    def _rest(self) -> list:
        """Every remaining record: the rest of the current batch, then whole batches."""
        records = list(self._current) if not self._closed else []
        for batch in self._batches:
            if self._closed:
                break
            records.extend(batch)
        return records

    def to_pandas(self, columns: Optional[Sequence[str]] = None) -> Any:
        """Every remaining result as a pandas DataFrame (waits for a bounded job to end), then closes."""
        try:
            return CollectedRecords(self._rest()).to_pandas(columns)
        finally:
            self.close()

    def __enter__(self) -> "CloseableIterator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _one_record_batches(records: Iterable[Any]) -> Iterator[list]:
    """A record iterable as batches of one record (iterators made by hand, tests)."""
    for record in records:
        yield [record]
