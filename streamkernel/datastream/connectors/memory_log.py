"""A partitioned in-memory log and its source: Kafka's topic and KafkaSource, small enough to read.

:class:`MemoryLog` is a topic with a fixed number of partitions; each partition is an
append-only list of records, addressed by offset. :class:`MemoryLogSource` reads it the
way Flink's KafkaSource reads a topic, which makes the *source-parallelism vs
partitions* rule visible in a notebook:

* partition ``p`` is read by source subtask ``p % parallelism``;
* with more subtasks than partitions the extra subtasks have nothing to read: they sit
  **idle** and say so downstream (a WatermarkStatus), so they do not hold back event time;
* with fewer subtasks than partitions a subtask reads several partitions.

    >>> log = MemoryLog("clicks", partitions=3)
    >>> log.append("a", key="user-1")[0] == log.append("b", key="user-1")[0]  # same key, same partition
    True
    >>> source = MemoryLogSource(log, bounded=True)   # env.from_source(source, strategy, "clicks")

Offsets make the source replayable: a checkpoint stores the next offset per partition.
"""

from __future__ import annotations

import threading
from typing import Any, Iterable, Optional

from streamkernel.datastream.connectors.base import Boundedness, Source
from streamkernel.datastream.connectors.shared_objects import SharedObjectRegistry
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.keygroups import assign_to_key_group

__all__ = ["MemoryLog", "MemoryLogSource"]

_LOGS = SharedObjectRegistry()


def _live_log(token: str, name: str, partitions: list[list]) -> "MemoryLog":
    """Unpickling: the live log of this process, or (in another process) a copy of its records."""
    log = _LOGS.get(token)
    if log is None:
        log = MemoryLog(name, len(partitions), _token=token)
        log._partitions = partitions
    return log


class MemoryLog:
    """A topic of ``partitions`` append-only partitions held in memory (thread-safe).

    ``append(value, key=...)`` puts records with the same key into the same partition (a
    deterministic hash, the same in every process); without key or partition records go
    round robin. Readers may read while others append.

    A copy of the log pickled to another process (process/spark TaskManagers) holds the
    records appended before the job was submitted; live appends reach only TaskManagers
    running in this process (the default ``local`` backend).
    """

    def __init__(self, name: str, partitions: int, *, _token: Optional[str] = None) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidProgramError(f"MemoryLog: name must be a non-empty str, got {name!r}")
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise InvalidProgramError(f"MemoryLog {name!r}: partitions must be an int >= 1, got {partitions!r}")
        self.name = name
        # Each partition only grows (append). Readers slice without the lock: under the GIL a
        # list slice is atomic, so they always see a consistent prefix of the partition.
        self._partitions: list[list] = [[] for _ in range(partitions)]
        # guards _round_robin and makes (choose partition, append, read offset) one step
        self._lock = threading.Lock()
        self._round_robin = 0
        self._token = _LOGS.register(self, _token)

    @property
    def num_partitions(self) -> int:
        """How many partitions the log has."""
        return len(self._partitions)

    def _partition_for(self, partition: Optional[int], key: Any) -> int:
        n = len(self._partitions)
        if partition is not None:
            if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < n:
                raise InvalidProgramError(
                    f"MemoryLog {self.name!r}: partition must be an int in 0..{n - 1}, got {partition!r}")
            return partition
        if key is not None:
            return assign_to_key_group(key, n)
        p = self._round_robin
        self._round_robin = (p + 1) % n
        return p

    def append(self, value: Any, partition: Optional[int] = None, key: Any = None) -> tuple[int, int]:
        """Append ``value`` to ``partition``, to the partition of ``key``, or round robin.

        Returns ``(partition, offset)`` of the new record.
        """
        with self._lock:
            p = self._partition_for(partition, key)
            records = self._partitions[p]
            records.append(value)
            return p, len(records) - 1

    def extend(self, values: Iterable[Any], partition: Optional[int] = None, key: Any = None) -> None:
        """Append every value (each as :meth:`append` would: same partition/key, or round robin)."""
        for value in values:
            self.append(value, partition, key)

    def end_offsets(self) -> list[int]:
        """The offset after the last record of each partition (its length)."""
        return [len(records) for records in self._partitions]

    def read(self, partition: int, start: int, stop: Optional[int] = None) -> list:
        """The records of ``partition`` from offset ``start`` up to ``stop`` (exclusive; end if None)."""
        return self._partitions[partition][start:stop]

    def partition(self, partition: int) -> list:
        """A copy of all records of ``partition``."""
        return list(self._partitions[partition])

    def __len__(self) -> int:
        return sum(len(records) for records in self._partitions)

    def __reduce__(self) -> tuple:
        return _live_log, (self._token, self.name, [list(p) for p in self._partitions])

    def __repr__(self) -> str:
        return f"MemoryLog({self.name!r}, partitions={self.num_partitions}, records={len(self)})"


class MemoryLogSource(Source):
    """Reads a :class:`MemoryLog` as Flink's KafkaSource reads a topic.

    ``start_from_earliest``: read each partition from offset 0 (else from the end present
    when the reader starts: only new records). ``bounded``: stop at the end offsets present
    when the reader starts (Kafka's ``set_bounded(OffsetsInitializer.latest())``);
    otherwise keep reading new records until cancelled. Partition ``p`` goes to source
    subtask ``p % parallelism``; subtasks without a partition are idle.
    """

    default_name = "MemoryLog Source"

    def __init__(self, log: MemoryLog, start_from_earliest: bool = True, bounded: bool = False) -> None:
        if not isinstance(log, MemoryLog):
            raise InvalidProgramError(f"MemoryLogSource: log must be a MemoryLog, got {type(log).__name__}")
        self.log = log
        self.start_from_earliest = bool(start_from_earliest)
        self.bounded = bool(bounded)

    def get_boundedness(self) -> Boundedness:
        """BOUNDED when ``bounded=True``, else CONTINUOUS_UNBOUNDED."""
        return Boundedness.BOUNDED if self.bounded else Boundedness.CONTINUOUS_UNBOUNDED

    def partitions_of_subtask(self, subtask_index: int, parallelism: int) -> list[int]:
        """The partitions source subtask ``subtask_index`` reads (p % parallelism == index)."""
        return [p for p in range(self.log.num_partitions) if p % parallelism == subtask_index]

    def __repr__(self) -> str:
        return (f"MemoryLogSource({self.log.name!r}, start_from_earliest={self.start_from_earliest}, "
                f"bounded={self.bounded})")
