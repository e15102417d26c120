"""Reader of a NumberSequenceSource: one contiguous part of ``start..end`` per subtask.

The range is cut into ``parallelism`` contiguous splits of (nearly) equal size, as Flink's
NumberSequenceSource does; subtask ``i`` reads split ``i``. Position: the splits, each as
``(next number, end exclusive)`` (a finished split has ``next == end``). Restored at
another parallelism, the unread parts are halved until every new subtask can get one
(:meth:`RangeSplits.rebalance`; Flink does not cut restored splits, but a subtask left
without work finishes at once, and checkpoints stop once a task finished), dealt out
again (``owns_split``), and a subtask reads its splits one after the other: every number
is emitted exactly once.
"""

from __future__ import annotations

from typing import Callable, Optional

from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.runtime.sources.base import Batch, SourceReader, split_range

__all__ = ["NumberSequenceReader", "RangeSplits"]


class RangeSplits:
    """Index ranges ``[next, end)`` read in order (the splits of a number sequence or a bounded generator)."""

    __slots__ = ("ranges", "current")

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        self.ranges = [[int(lo), int(hi)] for lo, hi in ranges]
        self.current = 0  # index of the first range not read to its end

    def take(self, max_records: int) -> Optional[range]:
        """The next at most ``max_records`` indexes (one range, advanced); None when all are read."""
        ranges = self.ranges
        while self.current < len(ranges):
            split = ranges[self.current]
            lo, hi = split
            if lo < hi:
                stop = min(lo + max_records, hi)
                split[0] = stop
                return range(lo, stop)
            self.current += 1
        return None

    @staticmethod
    def rebalance(ranges: list, parallelism: int) -> list[tuple[int, int]]:
        """``ranges`` with the unread ones first, the largest halved until there are
        ``parallelism`` of them (or none can be cut), then the finished ones (kept: a
        finished range is a position too). Deterministic.

            >>> RangeSplits.rebalance([(4, 10), (10, 10)], 3)
            [(4, 5), (5, 7), (7, 10), (10, 10)]
        """
        live = [(int(lo), int(hi)) for lo, hi in ranges if lo < hi]
        done = [(int(lo), int(hi)) for lo, hi in ranges if lo >= hi]
        while len(live) < parallelism:
            index = max(range(len(live)), key=lambda i: live[i][1] - live[i][0], default=None)
            if index is None or live[index][1] - live[index][0] < 2:
                break
            lo, hi = live[index]
            middle = lo + (hi - lo) // 2
            live[index:index + 1] = [(lo, middle), (middle, hi)]
        return live + done

    @property
    def finished(self) -> bool:
        """True once every range was read to its end."""
        return all(lo >= hi for lo, hi in self.ranges[self.current:])

    def snapshot(self) -> list[tuple[int, int]]:
        """Every range as ``(next, end)``, finished ones included."""
        return [(lo, hi) for lo, hi in self.ranges]


class NumberSequenceReader(SourceReader):
    """Emits the numbers of this subtask's splits in ascending order, ``max_records`` at a time."""

    def __init__(self, source: NumberSequenceSource, subtask_index: int, parallelism: int,
                 now_ms: Optional[Callable[[], int]] = None) -> None:
        super().__init__(subtask_index, parallelism, now_ms)
        self._splits = RangeSplits([split_range(source.start, source.end + 1, subtask_index, parallelism)])

    def read_batch(self, max_records: int) -> Optional[Batch]:
        """The next numbers; None after this subtask's last one."""
        numbers = self._splits.take(max_records)
        return None if numbers is None else (list(numbers), None)

    def snapshot_splits(self) -> list[tuple[int, int]]:
        """``[(next number, end exclusive), ...]``."""
        return self._splits.snapshot()

    def restore_splits(self, splits: list) -> None:
        """Read exactly these ranges."""
        self._splits = RangeSplits(splits)

    def rebalance_splits(self, splits: list) -> list:
        """Unread ranges halved until every subtask can get one (:meth:`RangeSplits.rebalance`)."""
        return RangeSplits.rebalance(splits, self.parallelism)
