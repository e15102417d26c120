"""The writer of FileSink: part files in buckets, two-phase commit (CsvSink: ``csv_sink``).

FileSink, per sink subtask (Flink's FileWriter + FileCommitter, in one object), per bucket
directory (``base_path`` or a date-time sub-directory; Flink's FileWriterBucket):

1. records go to an **in-progress** file ``.<prefix>-<uuid>-<n><suffix>.inprogress.<uuid>``
   (names: :mod:`~streamkernel.runtime.sinks.part_files`; the bucket's UUID, ``n`` counted
   from 0 per bucket);
2. the rolling policy **rolls** it (before a record when larger than the part size, by age
   and inactivity on a processing-time timer every ``bucket_check_interval``, at
   checkpoints): closed and **pending**;
3. pending files are **committed**, renamed to ``<prefix>-<uuid>-<n><suffix>``: with
   checkpointing, when the checkpoint that saw them completes (``commit``); and at the end
   of a bounded input (``finish``). Without checkpointing they wait for the end of input.

At a checkpoint a bucket with neither an in-progress nor a pending file is dropped: its next
record opens a bucket with a new UUID (as Flink). ``prepare_commit`` flushes the in-progress
files and returns the state a restart needs: the pending files (committed on restore: their
checkpoint completed), each in-progress file with its size (truncated back to it on restore
and appended to, as Flink's local recoverable writer does), each bucket's UUID and counter,
and the seed and sequence number of the bucket UUIDs. A restored subtask first removes the
part files written after the checkpoint by the failed attempts (in progress, or committed at
their end of input; ``part_files.remove_written_after``), and the sources replay their
records. So a restarted job neither loses nor repeats lines: the committed files hold the
lines of a run without failures.

Restored at another parallelism, new subtask ``j % parallelism`` recovers old subtask
``j``'s files: commits its pending files and its in-progress files cut back to their
checkpointed size (they are not continued), and removes its files written after the
checkpoint.

Bulk formats (``FileSink.for_bulk_format``): each part file gets its own bulk writer
(``bulk.create_bulk_writer``: Parquet, CSV, a factory of your own) that receives the
batches; rolling finishes it (footer) before the file is closed. The rolling policy is
on-checkpoint, so ``prepare_commit`` rolls every in-progress file: a bulk sink's
checkpoint state never holds an in-progress file, only pending (complete) ones.
"""

from __future__ import annotations

import datetime
import logging
import os
from typing import Any, Optional

from streamkernel.common.serialization import SimpleStringEncoder
from streamkernel.common.typeinfo.text import java_formatter
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.operators.contexts import wrap_user_error
from streamkernel.runtime.operators.simple import failed_index
from streamkernel.runtime.sinks.base import BatchSinkWriter, checkpointing_enabled
from streamkernel.runtime.sinks.part_files import (
    PartFileNames,
    bucket_uuid,
    derived_seed,
    in_progress_path,
    new_seed,
    remove_written_after,
)

__all__ = ["FileSinkWriter", "checkpointing_enabled"]

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


class _Bucket:
    """A bucket directory this subtask writes to (Flink's FileWriterBucket): its UUID, part
    counter, open part file and the part files rolled since the last checkpoint."""

    __slots__ = ("directory", "uid", "counter", "part", "pending")

    def __init__(self, directory: str, uid: str) -> None:
        self.directory = directory
        self.uid = uid
        self.counter = 0
        self.part: Optional[_PartFile] = None
        self.pending: list[tuple[str, str]] = []


def _commit_file(in_progress: str, final: str) -> None:
    """Publish a part file (idempotent: a file already committed is left alone)."""
    if os.path.exists(in_progress):
        os.replace(in_progress, final)


class FileSinkWriter(BatchSinkWriter):
    """Writes a FileSink's part files for one subtask (see the module docstring)."""

    _restored: Optional[dict] = None  # old subtask index -> its checkpoint state (set before open)
    _rescaled = False  # whether that state comes from another parallelism
    _all_seeds: tuple[str, ...] = ()  # the seeds of every old subtask (a rescaled restore)

    def open(self) -> None:
        """Prepare the base path and the rolling timer; after a restore, recover the checkpoint's files."""
        sink = self.sink
        self._base = os.path.normpath(sink.base_path)
        os.makedirs(self._base, exist_ok=True)
        config = sink.output_file_config
        self._names = PartFileNames(config.part_prefix, config.part_suffix)
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
        self._buckets: dict[str, _Bucket] = {}  # bucket directory -> bucket
        self._pending: list[tuple[str, str]] = []  # rolled files of buckets dropped at a checkpoint
        self._prepared: dict[int, list[tuple[str, str]]] = {}  # checkpoint id -> rolled before it
        restored = self._restored or {}
        if any("seed" not in state for state in restored.values()):
            raise InvalidProgramError(f"FileSink {self._base!r}: the restored checkpoint's sink state comes from a "
                                      f"version that named part files by subtask index; restore it with that "
                                      f"version, or start the job without it")
        own = restored.get(self.subtask_index) if not self._rescaled else None
        if own is not None:
            self._seed, self._next_bucket = str(own["seed"]), int(own["next_bucket"])
        elif self._rescaled:  # the same seed every time this checkpoint is restored at this parallelism
            self._seed = derived_seed(*self._all_seeds, self.subtask_index, self.parallelism)
            self._next_bucket = 0
        else:
            self._seed, self._next_bucket = new_seed(), 0
        if restored or self._rescaled:
            counters = {uid: int(n) for state in restored.values() for uid, n in state["buckets"]}
            sequences = [(str(state["seed"]), int(state["next_bucket"])) for state in restored.values()]
            removed = remove_written_after(self._base, self._names, counters,
                                           sequences + [(self._seed, self._next_bucket)])
            if removed:
                _log.info("FileSink %s: removed %d part files written after the restored checkpoint",
                          self._base, len(removed))
        for index in sorted(restored):
            self._recover(restored[index], resume=restored[index] is own)
        self._timer: Any = None
        self._schedule_check()

    def _bucket_dir(self, now_ms: int) -> str:
        fmt = self._assigner.strftime_format
        if fmt is None:
            return self._base
        tz = None
        if self._assigner.timezone_id:
            from zoneinfo import ZoneInfo

            tz = ZoneInfo(self._assigner.timezone_id)
        return os.path.join(self._base, datetime.datetime.fromtimestamp(now_ms / 1000, tz).strftime(fmt))

    def _bucket(self, directory: str) -> _Bucket:
        bucket = self._buckets.get(directory)
        if bucket is None:
            bucket = self._buckets[directory] = _Bucket(directory, bucket_uuid(self._seed, self._next_bucket))
            self._next_bucket += 1
        return bucket

    def _new_part(self, bucket: _Bucket, now_ms: int) -> _PartFile:
        os.makedirs(bucket.directory, exist_ok=True)
        final = os.path.join(bucket.directory, self._names.name(bucket.uid, bucket.counter))
        bucket.counter += 1
        in_progress = in_progress_path(final)
        part = _PartFile(in_progress, final, open(in_progress, "wb"), 0, now_ms)
        if self._factory is not None:
            from streamkernel.runtime.sinks.bulk import create_bulk_writer

            try:
                part.writer = create_bulk_writer(self._factory, part.stream, f"FileSink {self._base!r} (sink "
                                                 f"subtask {self.subtask_index + 1}/{self.parallelism})")
            except BaseException:
                part.stream.close()
                os.remove(in_progress)
                raise
        bucket.part = part
        return part

    def write_batch(self, values: list, timestamps: Optional[list]) -> None:
        """Append the batch to the bucket's in-progress file, rolling it before a record when
        it is larger than the policy's part size (as Flink checks before every record)."""
        now = self._now()
        bucket = self._bucket(self._bucket_dir(now))
        part = bucket.part
        if part is None or self._policy.should_roll_on_event(part.size):
            part = self._roll_and_open(bucket, now)
        if part.writer is not None:
            self._write_bulk(part, values)
        elif self._charset is not None:
            data = ("\n".join(map(self._text, values)) + "\n").encode(self._charset)
            limit = self._policy.part_size
            if limit is None or part.size + len(data) <= limit:  # no record of the batch rolls
                part.stream.write(data)
                part.size += len(data)
            else:
                part = self._write_rolling(bucket, part, values, now)
        else:
            part = self._write_rolling(bucket, part, values, now)
        part.last_write_ms = now

    def _roll_and_open(self, bucket: _Bucket, now_ms: int) -> _PartFile:
        if bucket.part is not None:
            self._roll(bucket)
        return self._new_part(bucket, now_ms)

    def _write_rolling(self, bucket: _Bucket, part: _PartFile, values: list, now_ms: int) -> _PartFile:
        """Write record by record, rolling before a record when the file is too large."""
        policy, encode, text, charset = self._policy, self._encode, self._text, self._charset
        it = iter(values)
        try:
            for value in it:
                if policy.should_roll_on_event(part.size):
                    part.last_write_ms = now_ms
                    part = self._roll_and_open(bucket, now_ms)
                if charset is not None:
                    data = (text(value) + "\n").encode(charset)
                    part.stream.write(data)
                    part.size += len(data)
                else:
                    assert encode is not None  # a row-format sink (no bulk writer) always has an encoder
                    encode(value, part.stream)
                    part.size = part.stream.tell()
        except Exception as exc:
            raise wrap_user_error(self, values[failed_index(values, it)], exc) from exc
        return part

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

    def _roll(self, bucket: _Bucket) -> None:
        """Close the bucket's in-progress file: it is pending until committed."""
        part = bucket.part
        assert part is not None
        bucket.part = None
        if part.writer is not None:
            try:
                part.writer.finish()
            except BaseException:
                part.stream.close()
                raise
        part.stream.close()
        bucket.pending.append((part.in_progress, part.final))

    def _schedule_check(self) -> None:
        service = self.context.processing_time
        self._timer = service.register_timer(service.current_processing_time() + self.sink.bucket_check_interval,
                                             self._on_check)

    def _on_check(self, *_: Any) -> None:
        """Processing-time timer: roll parts that are too old or inactive."""
        if self._timer is None:
            return
        now = self._now()
        for bucket in list(self._buckets.values()):
            part = bucket.part
            if part is not None and self._policy.should_roll_on_processing_time(part.opened_ms, part.last_write_ms,
                                                                               now):
                self._roll(bucket)
        self._schedule_check()

    # ---------------------------------------------------- two-phase commit
    def prepare_commit(self, checkpoint_id: int) -> dict:
        """Drop inactive buckets; roll what the policy rolls on checkpoint; flush; this checkpoint's state."""
        prepared, self._pending = self._pending, []
        for directory, bucket in list(self._buckets.items()):
            if bucket.part is None and not bucket.pending:
                del self._buckets[directory]  # as Flink: its next record opens a bucket with a new UUID
                continue
            if bucket.part is not None and self._policy.should_roll_on_checkpoint(bucket.part.size):
                self._roll(bucket)
            prepared += bucket.pending
            bucket.pending = []
        for bucket in self._buckets.values():
            if bucket.part is not None:
                bucket.part.stream.flush()
                os.fsync(bucket.part.stream.fileno())
        self._prepared[checkpoint_id] = prepared
        parts = [b.part for b in self._buckets.values() if b.part is not None]
        return {
            "pending": [f for files in self._prepared.values() for f in files],
            "in_progress": [(p.in_progress, p.final, p.size) for p in parts],
            "buckets": [(b.uid, b.counter) for b in self._buckets.values()],
            "seed": self._seed,
            "next_bucket": self._next_bucket,
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
        self._all_seeds = tuple(sorted(str(state["seed"]) for state in states if state is not None))

    def _recover(self, state: Any, resume: bool) -> None:
        """Commit a restored writer's pending files; cut its in-progress files back to the
        checkpoint: continued when ``resume`` (in a bucket with a new UUID, as Flink), else committed."""
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
                self._bucket(os.path.dirname(in_progress)).part = _PartFile(in_progress, final, stream, size, now)
            else:
                stream.close()
                _commit_file(in_progress, final)

    def finish(self) -> None:
        """End of input: roll every in-progress file and commit everything."""
        for bucket in self._buckets.values():
            if bucket.part is not None:
                self._roll(bucket)
            self._pending += bucket.pending
            bucket.pending = []
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
        for bucket in getattr(self, "_buckets", {}).values():
            part = bucket.part
            if part is None:
                continue
            discard = getattr(part.writer, "discard", None)  # a bulk writer abandoning its file
            if callable(discard):
                discard()
            part.stream.close()
        self._buckets = {}
