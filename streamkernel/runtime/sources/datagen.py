"""Reader of a DataGeneratorSource: ``generator_function(i)`` for this subtask's indexes.

Split: with a ``count`` the indexes ``0..count-1`` are cut into contiguous ranges, one per
subtask (as Flink, which builds its generator source on a number sequence); without a
count (unbounded) subtask ``s`` generates ``s, s + p, s + 2p, ...``. Position: the splits,
``(next index, end exclusive)`` ranges when bounded and ``(next index, stride)`` when
unbounded; the records are a function of the index, so replay regenerates them exactly.
Restored at another parallelism, the splits are cut until every new subtask can get one
(ranges halved, a strided split ``(n, s)`` into ``(n, 2s)`` and ``(n + s, 2s)``) and dealt
out again (``owns_split``): a subtask reads its ranges one after the other, or generates
from its strided splits in turn.

Rate limit: ``records_per_second`` is for the whole source; each subtask gets an equal
share. The reader never sleeps: :meth:`DataGeneratorReader.rate_budget` says how many
records are due at a given time (record ``n`` since the start is due at ``start + n /
rate``) and ``poll_delay_seconds`` how long until the next one is due. As Guava's
RateLimiter in Flink, at most one second of unused budget is kept, so a stall (e.g. under
backpressure) is not followed by an unbounded burst.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

from streamkernel.datastream.connectors.datagen import DataGeneratorSource
from streamkernel.runtime.sources.base import Batch, SourceReader, split_range
from streamkernel.runtime.sources.number_seq import RangeSplits

__all__ = ["DataGeneratorReader"]

_MAX_POLL_DELAY_SECONDS = 0.5


class DataGeneratorReader(SourceReader):
    """Generates this subtask's records, rate-limited if the source says so."""

    def __init__(self, source: DataGeneratorSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._generate = source.generator_function
        self._ranges: Optional[RangeSplits] = None  # bounded: index ranges
        self._strided: list[list[int]] = []  # unbounded: [next index, stride] per split
        self._turn = 0
        if source.count is not None:
            self._ranges = RangeSplits([split_range(0, source.count, subtask_index, parallelism)])
        else:
            self._strided = [[subtask_index, parallelism]]
        rate = source.records_per_second
        #: records per second of this subtask (None: unlimited)
        self.rate: Optional[float] = rate / parallelism if rate else None
        self._rate_start_ms: Optional[float] = None
        self._rate_emitted = 0

    # ------------------------------------------------------------ rate limit
    def rate_budget(self, now_ms: int) -> int:
        """How many records may be emitted at ``now_ms`` (a large number when unlimited)."""
        rate = self.rate
        if rate is None:
            return 1 << 62
        if self._rate_start_ms is None:
            self._rate_start_ms = now_ms
        due_of_next = self._rate_start_ms + self._rate_emitted * 1000.0 / rate
        if now_ms - due_of_next > 1000:  # keep at most one second of unused budget
            self._rate_start_ms = now_ms - 1000 - self._rate_emitted * 1000.0 / rate
        elapsed = now_ms - self._rate_start_ms
        return max(0, math.floor(elapsed * rate / 1000.0 + 1e-9) + 1 - self._rate_emitted)

    def poll_delay_seconds(self) -> float:
        """Until the next record is due (rate limit), at most half a second."""
        if self.is_idle:
            return _MAX_POLL_DELAY_SECONDS
        if self.rate is None or self._rate_start_ms is None:
            return 0.0
        due_ms = self._rate_start_ms + self._rate_emitted * 1000.0 / self.rate
        return min(max(0.0, (due_ms - self.now_ms()) / 1000.0), _MAX_POLL_DELAY_SECONDS)

    # --------------------------------------------------------------- reading
    def read_batch(self, max_records: int) -> Optional[Batch]:
        """The next generated records (fewer, or none, while the rate limit holds them back)."""
        if self._ranges is None and not self._strided:
            return [], None  # unbounded, but no split of its own after a rescaled restore
        if self._ranges is not None and self._ranges.finished:
            return None
        n = max_records
        if self.rate is not None:
            n = min(n, self.rate_budget(self.now_ms()))
            if n == 0:
                return [], None
        if self._ranges is not None:
            indexes = self._ranges.take(n)
            if indexes is None:
                return None
        else:
            split = self._strided[self._turn]
            self._turn = (self._turn + 1) % len(self._strided)
            start, step = split
            indexes = range(start, start + n * step, step)
            split[0] = start + n * step
        # hot path: one C-level map over the index range, no per-record Python frame of ours
        values = list(map(self._generate, indexes))
        self._rate_emitted += len(values)
        return values, None

    def snapshot_splits(self) -> list[tuple[int, int]]:
        """``[(next index, end exclusive), ...]`` when bounded, ``[(next index, stride), ...]`` when not."""
        if self._ranges is not None:
            return self._ranges.snapshot()
        return [(start, step) for start, step in self._strided]

    def rebalance_splits(self, splits: list) -> list:
        """Cut the splits until every subtask can get one (module docstring); deterministic."""
        if self._ranges is not None:
            return RangeSplits.rebalance(splits, self.parallelism)
        strided = [(int(start), int(step)) for start, step in splits]
        while strided and len(strided) < self.parallelism:
            index = min(range(len(strided)), key=lambda i: strided[i][1])  # the densest
            start, step = strided[index]
            strided[index:index + 1] = [(start, 2 * step), (start + step, 2 * step)]
        return strided

    def restore_splits(self, splits: list) -> None:
        """Generate exactly these splits (the rate limiter starts afresh)."""
        if self._ranges is not None:
            self._ranges = RangeSplits(splits)
        else:
            self._strided = [[int(start), int(step)] for start, step in splits]
            self._turn = 0
            self.is_idle = not self._strided
        self._rate_start_ms = None
        self._rate_emitted = 0
