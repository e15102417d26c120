"""Windows: the finite buckets a window assigner puts elements into.

A :class:`Window` has a maximum timestamp, after which all its elements have arrived.
:class:`TimeWindow` is an interval ``[start, end)``, :class:`CountWindow` a numbered bucket
of a count window, :class:`GlobalWindow` the one window that holds everything. Windows are
immutable values: equal windows hash alike, so the runtime uses them as state namespaces.

Each window kind has a serializer (struct-encoded, no pickle) that the runtime uses to key
window state and to write it into snapshots.
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from typing import Any, BinaryIO, Callable, Iterable, List, Optional, Tuple

__all__ = [
    "MAX_LONG_VALUE",
    "MIN_LONG_VALUE",
    "Window",
    "TimeWindow",
    "CountWindow",
    "GlobalWindow",
    "TimeWindowSerializer",
    "CountWindowSerializer",
    "GlobalWindowSerializer",
]

MAX_LONG_VALUE = 0x7FFFFFFFFFFFFFFF
"""Java's ``Long.MAX_VALUE`` (2^63 - 1): the end of time, max timestamp of count/global windows."""

MIN_LONG_VALUE = -MAX_LONG_VALUE - 1
"""Java's ``Long.MIN_VALUE`` (-2^63): the "no timestamp" marker of a record."""


class Window(ABC):
    """A grouping of elements into a finite bucket.

    Windows have a maximum timestamp which means that, at some point, all elements that go
    into one window will have arrived.
    """

    __slots__ = ()

    @abstractmethod
    def max_timestamp(self) -> int:
        """The largest timestamp that still belongs to this window."""


class TimeWindow(Window):
    """A window that represents the time interval from ``start`` (inclusive) to ``end`` (exclusive).

    Example::

        >>> w = TimeWindow(0, 5000)
        >>> w.max_timestamp()
        4999
    """

    __slots__ = ("_start", "_end")

    def __init__(self, start: int, end: int) -> None:
        self._start = int(start)
        self._end = int(end)

    @property
    def start(self) -> int:
        """The first timestamp of the window (inclusive)."""
        return self._start

    @property
    def end(self) -> int:
        """The end of the window (exclusive): the first timestamp after it."""
        return self._end

    def max_timestamp(self) -> int:
        """``end - 1``: the largest timestamp inside the window."""
        return self._end - 1

    def intersects(self, other: "TimeWindow") -> bool:
        """Return True if this window and ``other`` overlap or touch (Flink's rule)."""
        return self._start <= other.end and self._end >= other.start

    def cover(self, other: "TimeWindow") -> "TimeWindow":
        """Return the smallest window that covers both this window and ``other``."""
        return TimeWindow(min(self._start, other.start), max(self._end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Return the start of the window of ``window_size`` (shifted by ``offset``) holding ``timestamp``.

        Flink's formula, negative timestamps included: the result is always <= timestamp
        and ``(result - offset)`` is a multiple of ``window_size``. (Python's ``%`` is
        floored, which is exactly Flink's "add the size to a negative remainder".)

        >>> TimeWindow.get_window_start_with_offset(-1, 0, 5)
        -5
        """
        return timestamp - (timestamp - offset) % window_size

    @staticmethod
    def merge_windows(windows: Iterable["TimeWindow"], callback: Any) -> None:
        """Merge overlapping windows, as session windows do (Flink's ``TimeWindow.mergeWindows``).

        Sorts the windows by start, folds every window that intersects the running merge
        into it, and calls ``callback.merge(to_be_merged, merge_result)`` (a
        ``MergingWindowAssigner.MergeCallback``, or a plain callable taking the same two
        arguments) once for each merged set of more than one window. ``to_be_merged`` is a
        list of distinct windows in the order PyFlink iterates its merge set (see
        :func:`_pyflink_set_order`): the window operator keeps the contents of the first
        one and appends the others', so this order is the order of a merged session's elements.
        """
        merge = _merge_function(callback)
        current: Optional[TimeWindow] = None
        members: List[TimeWindow] = []
        merged: List[Tuple[TimeWindow, List[TimeWindow]]] = []
        for candidate in sorted(set(windows)):
            if current is None:
                current, members = candidate, [candidate]
            elif current.intersects(candidate):
                current = current.cover(candidate)
                members.append(candidate)
            else:
                merged.append((current, members))
                current, members = candidate, [candidate]
        if current is not None:
            merged.append((current, members))
        for result, to_be_merged in merged:
            if len(to_be_merged) > 1:
                merge(_pyflink_set_order(to_be_merged), result)

    def _key(self) -> Tuple[int, int]:
        return (self._start, self._end)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TimeWindow) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(("TimeWindow", self._start, self._end))

    def __lt__(self, other: "TimeWindow") -> bool:
        if not isinstance(other, TimeWindow):
            return NotImplemented
        return self._key() < other._key()

    def __le__(self, other: "TimeWindow") -> bool:
        if not isinstance(other, TimeWindow):
            return NotImplemented
        return self._key() <= other._key()

    def __gt__(self, other: "TimeWindow") -> bool:
        if not isinstance(other, TimeWindow):
            return NotImplemented
        return self._key() > other._key()

    def __ge__(self, other: "TimeWindow") -> bool:
        if not isinstance(other, TimeWindow):
            return NotImplemented
        return self._key() >= other._key()

    def __reduce__(self) -> Any:
        return (TimeWindow, (self._start, self._end))

    def __repr__(self) -> str:
        return f"TimeWindow(start={self._start}, end={self._end})"


def _pyflink_mod_inverse(x: int) -> int:
    """PyFlink's ``mod_inverse`` (``pyflink.datastream.window``), part of ``TimeWindow.__hash__``."""
    inverse = x * x * x
    inverse *= 2 - x * inverse
    inverse *= 2 - x * inverse
    inverse *= 2 - x * inverse
    return inverse


class _PyFlinkHashed:
    """A TimeWindow hashed as PyFlink hashes one (``start + mod_inverse(2 * end + 1)``)."""

    __slots__ = ("window", "_hash")

    def __init__(self, window: "TimeWindow") -> None:
        self.window = window
        self._hash = hash(window.start + _pyflink_mod_inverse((window.end << 1) + 1))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PyFlinkHashed) and self.window == other.window


def _pyflink_set_order(windows: List["TimeWindow"]) -> List["TimeWindow"]:
    """``windows`` (sorted, distinct) in the order PyFlink's ``TimeWindow.merge_windows``
    set of them iterates: PyFlink adds the sorted windows to a Python ``set`` and its window
    operator keeps the state of the first window that set yields. The same hashes added in the
    same order give CPython's same iteration order; computed only when windows merge."""
    members = set()
    for window in windows:
        members.add(_PyFlinkHashed(window))
    return [member.window for member in members]


class CountWindow(Window):
    """A window of a count window assigner, identified by a unique ``id``.

    The id lets a count window act as the namespace of window state.
    """

    __slots__ = ("_id",)

    def __init__(self, id: int) -> None:  # noqa: A002 - PyFlink's argument name
        self._id = int(id)

    @property
    def id(self) -> int:
        """The number of this count window."""
        return self._id

    def max_timestamp(self) -> int:
        """Count windows never end in time: ``Long.MAX_VALUE``."""
        return MAX_LONG_VALUE

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CountWindow) and self._id == other._id

    def __hash__(self) -> int:
        return hash(("CountWindow", self._id))

    def __lt__(self, other: "CountWindow") -> bool:
        if not isinstance(other, CountWindow):
            return NotImplemented
        return self._id < other._id

    def __reduce__(self) -> Any:
        return (CountWindow, (self._id,))

    def __repr__(self) -> str:
        return f"CountWindow(id={self._id})"


class GlobalWindow(Window):
    """The single window into which :class:`GlobalWindows` puts all elements of a key."""

    __slots__ = ()
    _INSTANCE: Optional["GlobalWindow"] = None

    @staticmethod
    def get() -> "GlobalWindow":
        """Return the global window (one shared instance)."""
        if GlobalWindow._INSTANCE is None:
            GlobalWindow._INSTANCE = GlobalWindow()
        return GlobalWindow._INSTANCE

    def max_timestamp(self) -> int:
        """The global window never ends: ``Long.MAX_VALUE``."""
        return MAX_LONG_VALUE

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalWindow)

    def __hash__(self) -> int:
        return 0

    def __reduce__(self) -> Any:
        return (GlobalWindow.get, ())

    def __repr__(self) -> str:
        return "GlobalWindow"


def _merge_function(callback: Any) -> Callable[[List[TimeWindow], TimeWindow], None]:
    merge = getattr(callback, "merge", None)
    if callable(merge):
        return merge
    if callable(callback):
        return callback
    from streamkernel.errors import InvalidFunctionError

    raise InvalidFunctionError(
        "merge_windows: callback must be a MergingWindowAssigner.MergeCallback (with "
        f"merge(to_be_merged, merge_result)) or a callable, got {type(callback).__name__}"
    )


_TIME_WINDOW = struct.Struct(">qq")
_LONG = struct.Struct(">q")


class TimeWindowSerializer:
    """Writes a :class:`TimeWindow` as 16 bytes (start and end, big-endian longs)."""

    def serialize(self, element: TimeWindow, stream: BinaryIO) -> None:
        """Write ``element`` to the binary ``stream``."""
        stream.write(_TIME_WINDOW.pack(element.start, element.end))

    def deserialize(self, stream: BinaryIO) -> TimeWindow:
        """Read one :class:`TimeWindow` from the binary ``stream``."""
        start, end = _TIME_WINDOW.unpack(stream.read(_TIME_WINDOW.size))
        return TimeWindow(start, end)

    def __eq__(self, other: object) -> bool:
        return type(other) is TimeWindowSerializer

    def __hash__(self) -> int:
        return hash(TimeWindowSerializer)


class CountWindowSerializer:
    """Writes a :class:`CountWindow` as 8 bytes (its id, a big-endian long)."""

    def serialize(self, element: CountWindow, stream: BinaryIO) -> None:
        """Write ``element`` to the binary ``stream``."""
        stream.write(_LONG.pack(element.id))

    def deserialize(self, stream: BinaryIO) -> CountWindow:
        """Read one :class:`CountWindow` from the binary ``stream``."""
        (window_id,) = _LONG.unpack(stream.read(_LONG.size))
        return CountWindow(window_id)

    def __eq__(self, other: object) -> bool:
        return type(other) is CountWindowSerializer

    def __hash__(self) -> int:
        return hash(CountWindowSerializer)


class GlobalWindowSerializer:
    """Writes the :class:`GlobalWindow` as one zero byte (there is only one)."""

    def serialize(self, element: GlobalWindow, stream: BinaryIO) -> None:
        """Write the global window marker to the binary ``stream``."""
        stream.write(b"\x00")

    def deserialize(self, stream: BinaryIO) -> GlobalWindow:
        """Read the global window marker from the binary ``stream``."""
        stream.read(1)
        return GlobalWindow.get()

    def __eq__(self, other: object) -> bool:
        return type(other) is GlobalWindowSerializer

    def __hash__(self) -> int:
        return hash(GlobalWindowSerializer)
