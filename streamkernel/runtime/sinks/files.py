"""Writers of FileSink (part files, two-phase commit) and CsvSink (one CSV file per subtask).

FileSink, per sink subtask (Flink's FileWriter + FileCommitter, in one object):

1. records go to an **in-progress** file ``.<prefix>-<subtask>-<n><suffix>.inprogress`` in
   the bucket directory (``base_path``, or a date-time sub-directory);
2. the rolling policy **rolls** it (size after a batch, age and inactivity checked on
   every batch and on a processing-time timer every ``bucket_check_interval``): closed and
   **pending**;
3. pending files are **committed**, renamed to ``<prefix>-<subtask>-<n><suffix>``: at once
   when checkpointing is off; with checkpointing, when the checkpoint that saw them
   completes (``commit``); and at the end of a bounded input (``finish``).

``prepare_commit`` (at a checkpoint) flushes the in-progress files and returns the state a
restart needs: the pending files (committed on restore: their checkpoint completed), each
in-progress file with its size (truncated back to it on restore and appended to, as
Flink's local recoverable writer does) and the part counter. A restored subtask also
removes its part files numbered from that counter on: they were written after the
checkpoint by the failed attempt (in progress, or committed at its end of input), and
the sources replay their records. So a restarted job neither loses nor repeats lines:
the committed files equal those of a run without failures.

Restored at another parallelism, new subtask ``j % parallelism`` recovers old subtask
``j``'s files: commits its pending files and its in-progress files cut back to their
checkpointed size (they are not continued), and removes its files written after the
checkpoint. Old subtask ``j``'s names are used by no one else meanwhile (new subtask
``j`` recovers them itself when it exists), so the subtasks never touch each other's files.

Bulk formats (``FileSink.for_bulk_format``): each part file gets its own bulk writer
(``bulk.create_bulk_writer``: Parquet, CSV, a factory of your own) that receives the
batches; rolling finishes it (footer) before the file is closed. The rolling policy is
on-checkpoint, so ``prepare_commit`` rolls every in-progress file: a bulk sink's
checkpoint state never holds an in-progress file, only pending (complete) ones.

CsvSink writes its file in place (visible while the job runs, flushed after every batch);
on restore from a checkpoint it is truncated back to its size at that checkpoint.
"""

from __future__ import annotations

import csv
import datetime
import io
import logging
import os
import re
from typing import Any, Optional, cast

from streamkernel.common.serialization import SimpleStringEncoder
from streamkernel.common.typeinfo.text import java_formatter
from streamkernel.common.types import Row
from streamkernel.runtime.operators.contexts import wrap_user_error
from streamkernel.runtime.operators.simple import failed_index
from streamkernel.runtime.sinks.base import BatchSinkWriter, checkpointing_enabled

__all__ = ["FileSinkWriter", "CsvSinkWriter", "checkpointing_enabled"]

_log = logging.getLogger(__name__)


class _PartFile:
    """An open in-progress part file."""

    __slots__ = ("in_progress", "final", "stream", "size", "opened_ms", "last_write_ms", "writer")

    def __init__(self, in_progress: str, final: str, stream: Any, size: int, now_ms: int) -> None:
        self.in_progress = in_progress
        self.final = final
        self.stream = stream
        self.size = size
        self.opened_ms = now_ms
        self.last_write_ms = now_ms
        self.writer: Any = None  # the bulk writer (bulk formats only)


def _commit_file(in_progress: str, final: str) -> None:
    """Publish a part file (idempotent: a file already committed is left alone)."""
    if os.path.exists(in_progress):
        os.replace(in_progress, final)


class FileSinkWriter(BatchSinkWriter):
    """Writes a FileSink's part files for one subtask (see the module docstring)."""

    _restored: Optional[dict] = None  # old subtask index -> its checkpoint state (set before open)
    _rescaled = False  # whether that state comes from another parallelism

    def open(self) -> None:
        """Prepare the base path, the part counter and the rolling timer."""
        sink = self.sink
        self._base = os.path.normpath(sink.base_path)  # bucket keys compare with dirname() of part files
        os.makedirs(self._base, exist_ok=True)
        config = sink.output_file_config
        self._prefix, self._suffix = config.part_prefix, config.part_suffix
        self._policy = sink.rolling_policy
        self._assigner = sink.bucket_assigner
        self._now = self.context.processing_time.current_processing_time
        self._checkpointing = checkpointing_enabled(self.context.configuration)
        self._factory = sink.writer_factory  # bulk format (None: row format)
        encoder = sink.encoder
        # fast path: SimpleStringEncoder's output for a batch is one join, encoded once; its text
        # of a record is Java's toString() of the record's declared type, as in PyFlink
        self._charset = getattr(encoder, "_charset", None) if type(encoder) is SimpleStringEncoder else None
        self._text = java_formatter(self.input_type)
        self._encode = encoder.encode if encoder is not None else None
        self._parts: dict[str, _PartFile] = {}  # bucket directory -> its in-progress file
        self._pending: list[tuple[str, str]] = []  # rolled since the last checkpoint
        self._prepared: dict[int, list[tuple[str, str]]] = {}  # checkpoint id -> rolled before it
        restored = self._restored or {}
        for old_index, state in sorted(restored.items()):
            self._recover(old_index, state, resume=old_index == self.subtask_index and not self._rescaled)
        own = restored.get(self.subtask_index)
        self._counter = max(int(own["counter"]) if own is not None else 0, self._first_free_counter())
        self._timer: Any = None
        self._schedule_check()

    def _part_files(self, subtask_index: int) -> list[tuple[str, int]]:
        """(path, part number) of every part file of ``subtask_index`` (in progress or committed)."""
        pattern = re.compile(rf"^\.?{re.escape(self._prefix)}-{subtask_index}-(\d+)"
                             rf"{re.escape(self._suffix)}(\.inprogress)?$")
        found = []
        for root, _dirs, files in os.walk(self._base):
            for name in files:
                match = pattern.match(name)
                if match:
                    found.append((os.path.join(root, name), int(match.group(1))))
        return found

    def _first_free_counter(self) -> int:
        return max((n for _, n in self._part_files(self.subtask_index)), default=-1) + 1

    def _bucket_dir(self, now_ms: int) -> str:
        fmt = self._assigner.strftime_format
        if fmt is None:
            return self._base
        tz = None
        if self._assigner.timezone_id:
            from zoneinfo import ZoneInfo

            tz = ZoneInfo(self._assigner.timezone_id)
        return os.path.join(self._base, datetime.datetime.fromtimestamp(now_ms / 1000, tz).strftime(fmt))

    def _new_part(self, bucket: str, now_ms: int) -> _PartFile:
        os.makedirs(bucket, exist_ok=True)
        name = f"{self._prefix}-{self.subtask_index}-{self._counter}{self._suffix}"
        self._counter += 1
        in_progress = os.path.join(bucket, f".{name}.inprogress")
        part = _PartFile(in_progress, os.path.join(bucket, name), open(in_progress, "wb"), 0, now_ms)
        if self._factory is not None:
            from streamkernel.runtime.sinks.bulk import create_bulk_writer

            try:
                part.writer = create_bulk_writer(self._factory, part.stream, f"FileSink {self._base!r} (sink "
                                                 f"subtask {self.subtask_index + 1}/{self.parallelism})")
            except BaseException:
                part.stream.close()
                os.remove(in_progress)
                raise
        self._parts[bucket] = part
        return part

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Append the batch to the bucket's in-progress file; roll it if the policy says so."""
        now = self._now()
        bucket = self._bucket_dir(now)
        part = self._parts.get(bucket) or self._new_part(bucket, now)
        if part.writer is not None:
            self._write_bulk(part, values)
        elif self._charset is not None:
            data = ("\n".join(map(self._text, values)) + "\n").encode(self._charset)
            part.stream.write(data)
            part.size += len(data)
        else:
            encode, stream = self._encode, part.stream
            assert encode is not None  # a row-format sink (no bulk writer) always has an encoder
            it = iter(values)
            try:
                for value in it:
                    encode(value, stream)
            except Exception as exc:
                raise wrap_user_error(self, values[failed_index(values, it)], exc) from exc
            part.size = stream.tell()
        part.last_write_ms = now
        if self._policy.should_roll(part.size, part.opened_ms, now, now):
            self._roll(bucket)

    def _write_bulk(self, part: _PartFile, values: list) -> None:
        from streamkernel.runtime.sinks.bulk import RecordShapeError

        try:
            part.writer.add_elements(values)
        except RecordShapeError as exc:
            raise wrap_user_error(self, exc.record, exc) from exc
        except Exception as exc:
            raise wrap_user_error(self, values[0], exc, where=f"a batch of {len(values)} records starting with "
                                                             f"{values[0]!r}") from exc
        part.size = part.stream.tell()

    def _roll(self, bucket: str) -> None:
        part = self._parts.pop(bucket)
        if part.writer is not None:
            try:
                part.writer.finish()
            except BaseException:
                part.stream.close()
                raise
        part.stream.close()
        if self._checkpointing:
            self._pending.append((part.in_progress, part.final))
        else:
            _commit_file(part.in_progress, part.final)

    def _schedule_check(self) -> None:
        service = self.context.processing_time
        self._timer = service.register_timer(service.current_processing_time() + self.sink.bucket_check_interval,
                                             self._on_check)

    def _on_check(self, *_: Any) -> None:
        """Processing-time timer: roll parts that are too old or inactive."""
        if self._timer is None:
            return
        now = self._now()
        for bucket, part in list(self._parts.items()):
            if self._policy.should_roll(part.size, part.opened_ms, part.last_write_ms, now):
                self._roll(bucket)
        self._schedule_check()

    # ---------------------------------------------------- two-phase commit
    def prepare_commit(self, checkpoint_id: int) -> dict:
        """Flush; roll on checkpoint if the policy says so; the state of this checkpoint."""
        if self._policy.roll_on_checkpoint:
            for bucket in list(self._parts):
                self._roll(bucket)
        for part in self._parts.values():
            part.stream.flush()
            os.fsync(part.stream.fileno())
        self._prepared[checkpoint_id] = self._pending
        self._pending = []
        return {
            "pending": [f for files in self._prepared.values() for f in files],
            "in_progress": [(p.in_progress, p.final, p.size) for p in self._parts.values()],
            "counter": self._counter,
        }

    def commit(self, checkpoint_id: int) -> None:
        """Publish the files rolled before checkpoint ``checkpoint_id`` (and earlier ones)."""
        for cid in sorted(c for c in self._prepared if c <= checkpoint_id):
            for in_progress, final in self._prepared.pop(cid):
                _commit_file(in_progress, final)

    def restore(self, state: Any) -> None:
        """Restart from this subtask's state at a completed checkpoint (applied in ``open``)."""
        self._restored, self._rescaled = {self.subtask_index: state}, False

    def restore_rescaled(self, states: list) -> None:
        """Restart at another parallelism: recover the old subtasks ``j`` with ``j % parallelism == mine``."""
        self._restored, self._rescaled = self.owned_states(states), True

    def _recover(self, old_index: int, state: Any, resume: bool) -> None:
        """Commit old subtask ``old_index``'s pending files, cut its in-progress files back to the
        checkpoint (continued when ``resume``, else committed), remove its files written after it."""
        counter = int(state["counter"])
        for path, number in self._part_files(old_index):
            if number >= counter:
                os.remove(path)
        for in_progress, final in state["pending"]:
            _commit_file(in_progress, final)
        now = self._now()
        for in_progress, final, size in state["in_progress"]:
            if not os.path.exists(in_progress):
                if not os.path.exists(final):
                    _log.warning("FileSink %s: part file %s of the restored checkpoint is gone; its %d bytes are "
                                 "lost", self._base, in_progress, size)
                    continue
                os.replace(final, in_progress)  # committed at the end of input after the checkpoint: undo
            stream = open(in_progress, "r+b")
            stream.truncate(size)
            if resume:
                stream.seek(size)
                self._parts[os.path.dirname(in_progress)] = _PartFile(in_progress, final, stream, size, now)
            else:
                stream.close()
                _commit_file(in_progress, final)

    def finish(self) -> None:
        """End of input: roll every in-progress file and commit everything."""
        for bucket in list(self._parts):
            self._roll(bucket)
        for files in self._prepared.values():
            for in_progress, final in files:
                _commit_file(in_progress, final)
        self._prepared.clear()
        for in_progress, final in self._pending:
            _commit_file(in_progress, final)
        self._pending = []

    def close(self) -> None:
        """Stop the timer and close open files (uncommitted files stay in progress)."""
        if self._timer is not None and hasattr(self._timer, "cancel"):
            self._timer.cancel()
        self._timer = None
        for part in getattr(self, "_parts", {}).values():
            discard = getattr(part.writer, "discard", None)  # a bulk writer abandoning its file
            if callable(discard):
                discard()
            part.stream.close()
        self._parts = {}


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
