"""Reader of a DataGeneratorSource: ``generator_function(i)`` for this subtask's indexes.

Split: with a ``count`` the indexes ``0..count-1`` are cut into contiguous ranges, one per
subtask (as Flink, which builds its generator source on a number sequence); without a
count (unbounded) subtask ``s`` generates ``s, s + p, s + 2p, ...``. Position: the next
index; the records are a function of the index, so replay regenerates them exactly.

Rate limit: ``records_per_second`` is for the whole source; each subtask gets an equal
share. The reader never sleeps: :meth:`DataGeneratorReader.rate_budget` says how many
records are due at a given time (record ``n`` since the start is due at ``start + n /
rate``) and ``poll_delay_seconds`` how long until the next one is due. As Guava's
RateLimiter in Flink, at most one second of unused budget is kept, so a stall (e.g. under
backpressure) is not followed by an unbounded burst.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from streamkernel.datastream.connectors.datagen import DataGeneratorSource
from streamkernel.runtime.sources.base import Batch, SourceReader, split_range

__all__ = ["DataGeneratorReader"]

_MAX_POLL_DELAY_SECONDS = 0.5


class DataGeneratorReader(SourceReader):
    """Generates this subtask's records, rate-limited if the source says so."""

    def __init__(self, source: DataGeneratorSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._generate = source.generator_function
        if source.count is not None:
            self._next, self._stop = split_range(0, source.count, subtask_index, parallelism)
            self._step = 1
        else:
            self._next, self._stop, self._step = subtask_index, None, parallelism
        rate = source.records_per_second
        #: records per second of this subtask (None: unlimited)
        self.rate: Optional[float] = rate / parallelism if rate else None
        self._rate_start_ms: Optional[int] = None
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
        if self.rate is None or self._rate_start_ms is None:
            return 0.0
        due_ms = self._rate_start_ms + self._rate_emitted * 1000.0 / self.rate
        return min(max(0.0, (due_ms - self.now_ms()) / 1000.0), _MAX_POLL_DELAY_SECONDS)

    # --------------------------------------------------------------- reading
    def read_batch(self, max_records: int) -> Optional[Batch]:
        """The next generated records (fewer, or none, while the rate limit holds them back)."""
        start, stop, step = self._next, self._stop, self._step
        if stop is not None and start >= stop:
            return None
        n = max_records
        if self.rate is not None:
            n = min(n, self.rate_budget(self.now_ms()))
            if n == 0:
                return [], None
        end = start + n * step
        if stop is not None and end > stop:
            end = stop
        # hot path: one C-level map over the index range, no per-record Python frame of ours
        values = list(map(self._generate, range(start, end, step)))
        self._next = end
        self._rate_emitted += len(values)
        return values, None

    def snapshot_position(self) -> int:
        """The next index to generate."""
        return self._next

    def restore_position(self, position: Any) -> None:
        """Continue at index ``position`` (the rate limiter starts afresh)."""
        self._next = int(position)
        self._rate_start_ms = None
        self._rate_emitted = 0
