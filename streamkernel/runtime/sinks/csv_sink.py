"""The writer of CsvSink: one CSV file per subtask, written in place.

CsvSink writes its file in place (visible while the job runs, flushed after every batch);
on restore from a checkpoint it is truncated back to its size at that checkpoint.
"""

from __future__ import annotations

import csv
import io
import os
from typing import Any, Optional, cast

from streamkernel.common.types import Row
from streamkernel.runtime.operators.contexts import wrap_user_error
from streamkernel.runtime.sinks.base import BatchSinkWriter

__all__ = ["CsvSinkWriter"]


class CsvSinkWriter(BatchSinkWriter):
    """Writes CSV rows to ``path`` (parallelism 1) or ``path/<subtask + 1>.csv``."""

    _restored_size: Optional[int] = None

    def restore(self, state: Any) -> None:
        """Continue the file from its size at the restored checkpoint."""
        self._restored_size = int(state["size"])
        self._header_written = bool(state.get("header_written", False))
        self._columns = state.get("columns")

    def open(self) -> None:
        """Open (or, after a restore, truncate and reopen) the file; write the header."""
        sink = self.sink
        if self.parallelism == 1:
            self.path = sink.path
        else:
            self.path = os.path.join(sink.path, f"{self.subtask_index + 1}.csv")
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        if self._restored_size is not None:
            with open(self.path, "r+b") as raw:
                raw.truncate(self._restored_size)
            self._stream = open(self.path, "a", encoding=sink.charset_name, newline="")
        else:
            self._stream = open(self.path, "w", encoding=sink.charset_name, newline="")
            self._columns = list(sink.columns) if sink.columns is not None else None
            self._header_written = False
        self._writer = csv.writer(self._stream, delimiter=sink.delimiter)
        if self._columns is not None and not self._header_written:
            self._writer.writerow(self._columns)
            self._header_written = True

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Write one row per record (the batch's first record decides how records become rows)."""
        first = values[0]
        try:
            if isinstance(first, (tuple, list, Row)):
                rows: Any = values  # csv takes any iterable row (a Row iterates its values)
            elif isinstance(first, dict):
                if self._columns is None:
                    self._columns = list(first)
                    self._writer.writerow(self._columns)
                    self._header_written = True
                columns = self._columns
                rows = [[d.get(c) for c in columns] for d in values]
            else:
                rows = [(v,) for v in values]
            self._writer.writerows(rows)
        except Exception as exc:
            bad = next((v for v in values if type(v) is not type(first)), first)
            raise wrap_user_error(self, bad, TypeError(
                f"CsvSink {self.sink.path!r} cannot write this record as a CSV row ({exc}); "
                f"send records of one shape (tuples, Rows, dicts or scalars)")) from exc
        self._stream.flush()

    def prepare_commit(self, checkpoint_id: int) -> dict:
        """Flush; the file's size (and header state) at this checkpoint."""
        self._stream.flush()
        # bytes (a text stream's tell() is an opaque cookie); open() types the buffer without tell()
        size = cast(io.BufferedWriter, self._stream.buffer).tell()
        return {"size": size, "header_written": self._header_written, "columns": self._columns}

    def finish(self) -> None:
        """Flush and close the file."""
        self.close()

    def close(self) -> None:
        """Close the file."""
        stream = getattr(self, "_stream", None)
        if stream is not None and not stream.closed:
            stream.close()
