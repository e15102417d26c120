"""Buffer debloating: a receiving task shrinks its senders' buffers to ~1 s of its throughput.

Flink's ``org.apache.flink.runtime.throughput`` (``BufferDebloatConfiguration``,
``ThroughputCalculator``, ``BufferSizeEMA``, ``BufferDebloater``) and the task's part of it
(``StreamTask``'s periodic ``debloat()``). Under backpressure every input channel of a slow
task is full: ``credits`` buffers of ``taskmanager.network.batch-size`` records each, and an
aligned checkpoint barrier waits behind all of them. With debloating on, every
``buffer-debloat.period`` the task measures the records its input processed per second of
busy time (time spent waiting for input does not count, as Flink pauses its measurement
while the gate has no data) and computes::

    size = EMA(throughput x target / (credits of all its channels))

clamped to ``[taskmanager.memory.min-segment-size, taskmanager.network.batch-size]``, so the
records in flight to it amount to about ``target`` of processing. The size is announced to
the senders of all its channels only when it moved by at least ``threshold-percentages`` (or
reached the minimum or maximum). A sender's :class:`~.record_writer.RecordWriter` then sends
a channel's buffer once it holds the announced number of records.

Deviation from Flink: sizes count records, not bytes (a DataBuffer is a list of records);
the buffers a receiver can hold are its channels' credits (Flink: the buffers in use); the
size is recalculated between two input buffers (Flink: on a timer, between two records), so
a recalculation that comes several periods late moves the average by as many steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

from streamkernel.common.options import NettyShuffleEnvironmentOptions, TaskManagerOptions

__all__ = ["BufferDebloatConfiguration", "ThroughputCalculator", "BufferSizeEMA", "BufferDebloater",
           "TaskDebloater"]


@dataclass(frozen=True)
class BufferDebloatConfiguration:
    """The debloating settings of a task (Flink's ``BufferDebloatConfiguration``); sizes in records."""

    enabled: bool = False
    target_ms: int = 1000
    period_ms: int = 200
    max_buffer_size: int = 1024
    min_buffer_size: int = 1
    threshold_percentages: int = 25
    number_of_samples: int = 20

    @classmethod
    def from_configuration(cls, configuration: Mapping[str, Any]) -> "BufferDebloatConfiguration":
        """The settings of ``configuration`` (validated at submission; see ``validate_configuration``)."""
        maximum = NettyShuffleEnvironmentOptions.BATCH_SIZE.get(configuration)
        return cls(
            enabled=TaskManagerOptions.BUFFER_DEBLOAT_ENABLED.get(configuration),
            target_ms=TaskManagerOptions.BUFFER_DEBLOAT_TARGET.get(configuration).to_milliseconds(),
            period_ms=TaskManagerOptions.BUFFER_DEBLOAT_PERIOD.get(configuration).to_milliseconds(),
            max_buffer_size=maximum,
            min_buffer_size=min(maximum, TaskManagerOptions.MIN_MEMORY_SEGMENT_SIZE.get(configuration)),
            threshold_percentages=TaskManagerOptions.BUFFER_DEBLOAT_THRESHOLD_PERCENTAGES.get(configuration),
            number_of_samples=TaskManagerOptions.BUFFER_DEBLOAT_SAMPLES.get(configuration))


class ThroughputCalculator:
    """Records per second over the time measured since the last calculation (Flink's
    ``ThroughputCalculator``; the caller says how much data and how much measured time)."""

    def __init__(self) -> None:
        self.current_throughput = 0

    def calculate_throughput(self, data_size: int, time_ms: float) -> int:
        """``data_size`` records in ``time_ms`` ms of measured time, per second; with no measured
        time the previous throughput stays (Flink's rule)."""
        if data_size < 0 or time_ms < 0:
            raise ValueError(f"data size and time must be non-negative, got {data_size} and {time_ms}")
        if time_ms == 0:
            return self.current_throughput
        self.current_throughput = int(data_size / time_ms * 1000)
        return self.current_throughput


class BufferSizeEMA:
    """Exponential moving average of the buffer size (Flink's ``BufferSizeEMA``).

    ``alpha = 2 / (samples + 1)``; one step moves at most as far up as down (the instant size
    is capped at twice the current one); the result stays within [min, max].

    >>> ema = BufferSizeEMA(1024, 1, number_of_samples=1)  # alpha 1: no smoothing
    >>> ema.calculate_buffer_size(total_buffer_size=800, total_buffers=8)
    100
    """

    def __init__(self, max_buffer_size: int, min_buffer_size: int, number_of_samples: int,
                 starting_buffer_size: Optional[int] = None) -> None:
        if number_of_samples < 1:
            raise ValueError(f"number_of_samples must be >= 1, got {number_of_samples}")
        self.max_buffer_size = max_buffer_size
        self.min_buffer_size = min_buffer_size
        self.alpha = 2.0 / (number_of_samples + 1)
        self.last_buffer_size = float(max_buffer_size if starting_buffer_size is None else starting_buffer_size)

    def calculate_buffer_size(self, total_buffer_size: int, total_buffers: int) -> int:
        """The next size for ``total_buffer_size`` records spread over ``total_buffers`` buffers."""
        if total_buffer_size < 0 or total_buffers <= 0:
            raise ValueError(f"need a non-negative total size and positive buffers, got {total_buffer_size} "
                             f"and {total_buffers}")
        desirable = min(total_buffer_size / total_buffers, 2 * self.last_buffer_size)
        last = self.last_buffer_size + self.alpha * (desirable - self.last_buffer_size)
        self.last_buffer_size = max(self.min_buffer_size, min(last, self.max_buffer_size))
        return int(self.last_buffer_size + 0.5)  # Java's Math.round (Python's round() rounds half to even)


class BufferDebloater:
    """The buffer size of one gate from its throughput (Flink's ``BufferDebloater``).

    :meth:`recalculate_buffer_size` returns the new size to announce, or None when it is
    too close to the last announced one (threshold) or the same.

    >>> debloater = BufferDebloater(BufferDebloatConfiguration(True, 1000, 200, 1024, 1, 25, 1))
    >>> debloater.recalculate_buffer_size(throughput=400, buffers_in_use=8)  # 400 records in 1 s / 8 buffers
    50
    >>> debloater.recalculate_buffer_size(throughput=440, buffers_in_use=8) is None  # 55: within 25 %
    True
    """

    def __init__(self, config: BufferDebloatConfiguration) -> None:
        self.target_ms = config.target_ms
        self.max_buffer_size = config.max_buffer_size
        self.min_buffer_size = config.min_buffer_size
        self.threshold_factor = config.threshold_percentages / 100.0
        self.last_buffer_size = config.max_buffer_size
        self.ema = BufferSizeEMA(config.max_buffer_size, config.min_buffer_size, config.number_of_samples)

    def recalculate_buffer_size(self, throughput: int, buffers_in_use: int, periods: int = 1) -> Optional[int]:
        """The size to announce for ``throughput`` records/s over ``buffers_in_use`` buffers, or None.

        ``periods`` > 1: the recalculation comes late (the task was busy with one buffer for that
        many periods); the average moves as Flink's would have, one step per period, each with
        this throughput.
        """
        buffers = max(1, buffers_in_use)
        desired_total = throughput * self.target_ms // 1000
        for _ in range(max(1, periods)):
            new_size = self.ema.calculate_buffer_size(desired_total, buffers)
        if self.skip_update(new_size):
            return None
        self.last_buffer_size = new_size
        return new_size

    def skip_update(self, new_size: int) -> bool:
        """Whether ``new_size`` is not worth announcing: the same, or within the threshold of the
        last announced size (a size at the minimum or maximum is always announced)."""
        if new_size == self.last_buffer_size:
            return True
        if new_size <= self.min_buffer_size or new_size >= self.max_buffer_size:
            return False
        return abs(new_size - self.last_buffer_size) < int(self.last_buffer_size * self.threshold_factor)


class TaskDebloater:
    """A task's periodic debloating of its input gate (Flink's ``StreamTask.debloat``).

    The task calls :meth:`maybe_debloat` between two input buffers with the current
    ``perf_counter_ns``; once a period passed it measures the records processed and the busy
    time since the last time (``metrics.records_in``; ``metrics.idle_ns`` is subtracted), and
    announces a new size to every channel (``channel.announce_buffer_size``).
    """

    def __init__(self, config: BufferDebloatConfiguration, channels: Sequence[Any], credits_per_channel: int,
                 metrics: Any, now_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        self.config = config
        self.channels = list(channels)
        self.buffers = max(1, credits_per_channel * len(self.channels))
        self.metrics = metrics
        self.debloater = BufferDebloater(config)
        # after a long busy stretch the average catches up on at most this many periods (converged by then)
        self._max_periods = 5 * config.number_of_samples
        self.throughput = ThroughputCalculator()
        self._period_ns = config.period_ms * 1_000_000
        now = now_ns()
        self.next_ns = now + self._period_ns  # read by the task loop: no call before it is due
        self._last_ns = now
        self._last_records = metrics.records_in
        self._last_idle_ns = metrics.idle_ns
        self.announced: Optional[int] = None  # the last size announced to the channels

    def maybe_debloat(self, now_ns: int) -> Optional[int]:
        """Recalculate if a period passed; returns the size announced now (None if none)."""
        if now_ns < self.next_ns:
            return None
        return self.debloat(now_ns)

    def debloat(self, now_ns: int) -> Optional[int]:
        """Measure, recalculate, and announce the new size to every channel if it changed enough."""
        metrics = self.metrics
        records, idle = metrics.records_in, metrics.idle_ns
        elapsed_ns = now_ns - self._last_ns
        busy_ns = max(0, elapsed_ns - (idle - self._last_idle_ns))
        throughput = self.throughput.calculate_throughput(max(0, records - self._last_records), busy_ns / 1e6)
        self._last_ns, self._last_records, self._last_idle_ns = now_ns, records, idle
        self.next_ns = now_ns + self._period_ns
        periods = min(self._max_periods, max(1, elapsed_ns // self._period_ns))
        size = self.debloater.recalculate_buffer_size(throughput, self.buffers, periods)
        if size is not None:
            self.announced = size
            for channel in self.channels:
                channel.announce_buffer_size(size)
        return size
