"""Which channel each record of a HASH or CUSTOM edge goes to (Flink's ``ChannelSelector``).

:class:`~.record_writer.RecordWriter` routes batches on its hot path; what it needs to pick
channels by key lives here: the bounded key -> channel cache of a HASH edge, the per-record
path that names a record whose key selector fails, and the checked channels of a custom
partitioner (``partition_custom``), each failure a :class:`PartitioningError` naming the
partitioner and the record.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from streamkernel.errors import StreamKernelError
from streamkernel.graph.keygroups import assign_key_to_operator
from streamkernel.graph.partitioners import CustomPartitionerWrapper

__all__ = ["KEY_CACHE_SIZE", "KeyChannelCache", "PartitioningError", "hash_channels", "custom_channels"]

#: bound of the key -> channel cache of a HASH writer (cleared when full)
KEY_CACHE_SIZE = 1 << 16


class PartitioningError(StreamKernelError, ValueError):
    """A partitioner could not route a record: its key selector raised, or a custom
    Partitioner returned a channel out of range. Names the partitioner and the record."""


def _short(record: Any, limit: int = 200) -> str:
    text = repr(record)
    return text if len(text) <= limit else text[:limit] + "..."


class KeyChannelCache(dict):
    """key -> channel, computed on a miss (key groups of key_by's ``key_type``), bounded by
    clearing when full."""

    __slots__ = ("max_parallelism", "num_channels", "key_type")

    def __init__(self, max_parallelism: int, num_channels: int, key_type: Any = None) -> None:
        super().__init__()
        self.max_parallelism = max_parallelism
        self.num_channels = num_channels
        self.key_type = key_type

    def __missing__(self, key: Any) -> int:
        channel = assign_key_to_operator(key, self.max_parallelism, self.num_channels, self.key_type)
        if len(self) >= KEY_CACHE_SIZE:
            self.clear()
        self[key] = channel
        return channel


def hash_channels(values: list, key_fn: Callable[[Any], Any], cache: KeyChannelCache, key_selector: Any) -> list:
    """The channel of each record, per record and without the cache (unhashable keys), naming
    a record whose key selector fails."""
    max_par, n, key_type = cache.max_parallelism, cache.num_channels, cache.key_type
    channels = []
    for v in values:
        try:
            key = key_fn(v)
        except Exception as exc:
            raise PartitioningError(
                f"the key selector {key_selector!r} of a HASH (key_by) edge "
                f"raised {type(exc).__name__}: {exc} on record {_short(v)}") from exc
        channels.append(assign_key_to_operator(key, max_par, n, key_type))
    return channels


def custom_channels(values: list, key_fn: Callable[[Any], Any], partition: Callable[[Any, int], Any],
                    wrapper: CustomPartitionerWrapper, n: int) -> list[int]:
    """``partition(key_fn(record), n)`` per record, checked: an int (numpy ints are fine) in ``0..n-1``."""
    try:
        channels = [partition(key_fn(v), n) for v in values]
    except Exception as exc:
        record = _first_failing(values, lambda v: partition(key_fn(v), n))
        raise PartitioningError(
            f"the custom partitioner {wrapper.partitioner!r} (key selector {wrapper.key_selector!r}) "
            f"raised {type(exc).__name__}: {exc} on record {_short(record)}") from exc
    if set(map(type, channels)) != {int}:  # rare: numpy ints, bools, or a bad result
        channels = _as_ints(values, channels, wrapper)
    if min(channels) < 0 or max(channels) >= n:
        i = next(i for i, c in enumerate(channels) if not 0 <= c < n)
        raise PartitioningError(
            f"the custom partitioner {wrapper.partitioner!r} returned {channels[i]!r} for record "
            f"{_short(values[i])}; a partition must be in 0..{n - 1} (num_partitions={n})")
    return channels


def _as_ints(values: list, channels: list, wrapper: CustomPartitionerWrapper) -> list:
    """Partitions as ints, naming a record whose result is not one."""
    result = []
    for v, c in zip(values, channels):
        try:
            result.append(operator.index(c))
        except TypeError:
            raise PartitioningError(
                f"the custom partitioner {wrapper.partitioner!r} returned {c!r} "
                f"for record {_short(v)}; a partition must be an int") from None
    return result


def _first_failing(values: list, fn: Callable[[Any], Any]) -> Any:
    for v in values:
        try:
            fn(v)
        except Exception:
            return v
    return "<not reproducible>"
