"""Operator specs: what a stream node runs, one typed class per operator kind.

A :class:`~streamkernel.graph.stream_graph.StreamNode` carries one :class:`OperatorSpec`
subclass: the user's ``function`` (a Function object; the API wraps plain callables) and the
fixed parameters of that kind of operator as typed fields. The DataStream API builds them
(``streamkernel.datastream.operator_specs``); the runtime reads their fields
(``spec.key_selector``) and runs the operator class its registry names for the spec class.

Every spec checks its fields when it is built (``__post_init__``), so a bad one fails with
one line naming the operator kind and the field, before any graph or job exists.

Keyed operators also carry their KeySelector as the transformation's ``state_key_selector``
(``state_key_selector1``/``2``); the spec's copy is what the operator calls per record.
Side outputs: any function may ``yield output_tag, value`` (PyFlink) or call
``ctx.output(output_tag, value)``; ``get_side_output(tag)`` edges carry the tag.

This module is in the graph layer: user objects of the datastream layer (functions, key
selectors, window assigners, sinks) are typed as ``Any`` or ``Callable`` here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Optional

from streamkernel.errors import InvalidProgramError

__all__ = [
    "OperatorSpec",
    "OneInputSpec",
    "KeyedSpec",
    "TwoInputSpec",
    "SourceSpec",
    "MapSpec",
    "FlatMapSpec",
    "FilterSpec",
    "ProcessSpec",
    "KeyedProcessSpec",
    "ReduceSpec",
    "AggregationSpec",
    "WindowSpec",
    "CoMapSpec",
    "CoFlatMapSpec",
    "CoProcessSpec",
    "KeyedCoProcessSpec",
    "BroadcastProcessSpec",
    "KeyedBroadcastProcessSpec",
    "TimestampsWatermarksSpec",
    "AsyncWaitSpec",
    "SinkSpec",
    "SPEC_CLASSES",
    "spec_class_for_kind",
]

KeySelectorLike = Callable[[Any], Any]

AGGREGATION_TYPES = ("SUM", "MIN", "MAX", "MIN_BY", "MAX_BY")
WINDOW_STATES = ("reducing", "aggregating", "list")
OUTPUT_MODES = ("ORDERED", "UNORDERED")


@dataclass(frozen=True, eq=False, kw_only=True)
class OperatorSpec:
    """Base of the typed specs: ``function`` is the user's Function object (None for kinds
    that run none: sources, sinks, timestamps/watermarks, window apply/process).

    ``kind`` names the operator for the graph's names, renderings and error messages
    (``map``, ``window``, ``sink`` ...); each subclass has its ``KINDS``.
    """

    #: the kinds of operator this class describes (the first is its default ``kind``)
    KINDS: ClassVar[tuple[str, ...]] = ()
    #: False for kinds whose operator calls no function
    NEEDS_FUNCTION: ClassVar[bool] = True

    function: Any = None

    def __post_init__(self) -> None:
        if not self.KINDS:
            raise TypeError("OperatorSpec is abstract: build one of its subclasses (MapSpec, SinkSpec, ...)")
        if self.NEEDS_FUNCTION and self.function is None:
            self._fail("function", "is required (got None)")
        self.validate()

    def validate(self) -> None:
        """Check the fields of this kind (raise InvalidProgramError through :meth:`_fail`)."""

    @property
    def kind(self) -> str:
        """The operator kind (``map``, ``window``, ``sink`` ...)."""
        return self.KINDS[0]

    @property
    def is_source(self) -> bool:
        """True for operators that read from outside the dataflow."""
        return False

    @property
    def is_sink(self) -> bool:
        """True for operators that write outside the dataflow."""
        return False

    # ------------------------------------------------------------------ checks
    def _fail(self, field_name: str, problem: str) -> None:
        raise InvalidProgramError(f"{self.kind} operator: {field_name} {problem}")

    def _require(self, field_name: str) -> None:
        if getattr(self, field_name) is None:
            self._fail(field_name, "is required (got None)")

    def _check_callable(self, field_name: str, *, required: bool = False) -> None:
        value = getattr(self, field_name)
        if value is None:
            if required:
                self._fail(field_name, "is required (got None)")
            return
        if not callable(value):
            self._fail(field_name, f"must be callable (a KeySelector or a function), got {value!r} "
                                   f"({type(value).__name__})")

    def _check_one_of(self, field_name: str, allowed: tuple[str, ...]) -> None:
        value = getattr(self, field_name)
        if value not in allowed:
            self._fail(field_name, f"must be one of {', '.join(map(repr, allowed))}, got {value!r}")


# ---------------------------------------------------------------------- sources and sinks
@dataclass(frozen=True, eq=False, kw_only=True)
class SourceSpec(OperatorSpec):
    """``from_collection``, ``from_source``, ``add_source`` ... (built by the environment)."""

    KINDS = ("source",)
    NEEDS_FUNCTION = False

    #: the Source (or SourceFunction) read
    source: Any = None
    #: the WatermarkStrategy given to ``from_source`` (None: no timestamps or watermarks)
    watermark_strategy: Any = None

    def validate(self) -> None:
        self._require("source")

    @property
    def is_source(self) -> bool:
        return True


@dataclass(frozen=True, eq=False, kw_only=True)
class SinkSpec(OperatorSpec):
    """``print()``, ``add_sink()``, ``sink_to()``."""

    KINDS = ("sink",)
    NEEDS_FUNCTION = False

    #: PrintSink, a Sink, or a SinkFunction (a plain callable given to add_sink is wrapped in
    #: SinkFunction: called per record)
    sink: Any = None
    #: the records' declared TypeInformation (None: not declared); it decides their text in
    #: print() and SimpleStringEncoder, as in PyFlink
    input_type: Any = None

    def validate(self) -> None:
        self._require("sink")

    @property
    def is_sink(self) -> bool:
        return True


# ---------------------------------------------------------------------- one input
@dataclass(frozen=True, eq=False, kw_only=True)
class OneInputSpec(OperatorSpec):
    """map / flat_map / filter: ``key_selector`` set when applied to a KeyedStream."""

    #: the KeyedStream's KeySelector (None on a plain DataStream)
    key_selector: Optional[KeySelectorLike] = None

    def validate(self) -> None:
        self._check_callable("key_selector")


@dataclass(frozen=True, eq=False, kw_only=True)
class MapSpec(OneInputSpec):
    """``map()``, ``project()``: a MapFunction, ``map(v)`` -> one result."""

    KINDS = ("map",)


@dataclass(frozen=True, eq=False, kw_only=True)
class FlatMapSpec(OneInputSpec):
    """``flat_map()``: a FlatMapFunction, ``flat_map(v)`` -> an iterable of results."""

    KINDS = ("flat_map",)


@dataclass(frozen=True, eq=False, kw_only=True)
class FilterSpec(OneInputSpec):
    """``filter()``: a FilterFunction, ``filter(v)`` -> keep v if truthy."""

    KINDS = ("filter",)


@dataclass(frozen=True, eq=False, kw_only=True)
class ProcessSpec(OperatorSpec):
    """``DataStream.process()``: a ProcessFunction."""

    KINDS = ("process",)


@dataclass(frozen=True, eq=False, kw_only=True)
class KeyedSpec(OperatorSpec):
    """An operator that always runs on a KeyedStream."""

    #: the KeyedStream's KeySelector
    key_selector: Optional[KeySelectorLike] = None

    def validate(self) -> None:
        self._check_callable("key_selector", required=True)


@dataclass(frozen=True, eq=False, kw_only=True)
class KeyedProcessSpec(KeyedSpec):
    """``KeyedStream.process()``: a KeyedProcessFunction."""

    KINDS = ("keyed_process",)


@dataclass(frozen=True, eq=False, kw_only=True)
class ReduceSpec(KeyedSpec):
    """``KeyedStream.reduce()``: a ReduceFunction; emits the running reduction per record."""

    KINDS = ("reduce",)


@dataclass(frozen=True, eq=False, kw_only=True)
class AggregationSpec(KeyedSpec):
    """``sum/min/max/min_by/max_by``: a ReduceFunction implementing the aggregation (it runs
    like reduce)."""

    KINDS = ("aggregation",)

    #: SUM, MIN, MAX, MIN_BY or MAX_BY
    aggregation_type: str = "SUM"
    #: the aggregated field: a position (int) or a field name (str)
    field: Any = 0

    def validate(self) -> None:
        super().validate()
        self._check_one_of("aggregation_type", AGGREGATION_TYPES)
        if isinstance(self.field, bool) or not isinstance(self.field, (int, str)):
            self._fail("field", f"must be a position (int) or a field name (str), got {self.field!r}")


@dataclass(frozen=True, eq=False, kw_only=True)
class WindowSpec(OperatorSpec):
    """A window operator (WindowedStream / AllWindowedStream reduce, aggregate, apply, process).

    ``function`` is the ReduceFunction (reduce), AggregateFunction (aggregate) or None
    (apply/process: the window buffers all its records). Kind ``count_window`` for count
    assigners (``count=True``), ``window`` otherwise.
    """

    KINDS = ("window", "count_window")
    NEEDS_FUNCTION = False

    #: True for count assigners (kind ``count_window``)
    count: bool = False
    #: the KeyedStream's KeySelector (window_all: a NullByteKeySelector, key 0)
    key_selector: Optional[KeySelectorLike] = None
    #: the WindowAssigner
    window_assigner: Any = None
    #: the Trigger (the assigner's default unless set)
    trigger: Any = None
    #: ms kept after the watermark passed a window's end (0 for processing time)
    allowed_lateness: int = 0
    #: the OutputTag of late records (None: dropped)
    late_data_output_tag: Any = None
    #: the window contents' state: "reducing", "aggregating" or "list"
    window_state: str = "list"
    #: the user's window function, or the pass-through one after reduce/aggregate
    window_function: Any = None
    #: the InternalWindowFunction adapting ``window_function`` (the one the operator calls)
    internal_window_function: Any = None
    #: the accumulator's TypeInformation (aggregate) or None
    accumulator_type: Any = None
    #: True for window_all: every record has key 0
    non_keyed: bool = False

    @property
    def kind(self) -> str:
        return "count_window" if self.count else "window"

    def validate(self) -> None:
        self._check_callable("key_selector")
        self._require("window_assigner")
        self._require("trigger")
        self._require("internal_window_function")
        if isinstance(self.allowed_lateness, bool) or not isinstance(self.allowed_lateness, int):
            self._fail("allowed_lateness", f"must be an int (ms), got {self.allowed_lateness!r}")
        if self.allowed_lateness < 0:
            self._fail("allowed_lateness", f"must be >= 0 ms, got {self.allowed_lateness}")
        self._check_one_of("window_state", WINDOW_STATES)


# ---------------------------------------------------------------------- two inputs
@dataclass(frozen=True, eq=False, kw_only=True)
class TwoInputSpec(OperatorSpec):
    """co_map / co_flat_map: key selectors set when both inputs are keyed."""

    #: input 1's KeySelector (None unless both inputs are keyed)
    key_selector1: Optional[KeySelectorLike] = None
    #: input 2's KeySelector (None unless both inputs are keyed)
    key_selector2: Optional[KeySelectorLike] = None

    def validate(self) -> None:
        self._check_callable("key_selector1")
        self._check_callable("key_selector2")


@dataclass(frozen=True, eq=False, kw_only=True)
class CoMapSpec(TwoInputSpec):
    """``ConnectedStreams.map()``: a CoMapFunction (map1/map2)."""

    KINDS = ("co_map",)


@dataclass(frozen=True, eq=False, kw_only=True)
class CoFlatMapSpec(TwoInputSpec):
    """``ConnectedStreams.flat_map()``: a CoFlatMapFunction."""

    KINDS = ("co_flat_map",)


@dataclass(frozen=True, eq=False, kw_only=True)
class CoProcessSpec(TwoInputSpec):
    """``ConnectedStreams.process()`` on non-keyed inputs: a CoProcessFunction."""

    KINDS = ("co_process",)


@dataclass(frozen=True, eq=False, kw_only=True)
class KeyedCoProcessSpec(TwoInputSpec):
    """``ConnectedStreams.process()`` with both inputs keyed: a KeyedCoProcessFunction (or a
    CoProcessFunction)."""

    KINDS = ("keyed_co_process",)

    def validate(self) -> None:
        self._check_callable("key_selector1", required=True)
        self._check_callable("key_selector2", required=True)


@dataclass(frozen=True, eq=False, kw_only=True)
class BroadcastProcessSpec(OperatorSpec):
    """``BroadcastConnectedStream.process()``: a BroadcastProcessFunction; input 2 is the
    broadcast side."""

    KINDS = ("broadcast_process",)

    #: the MapStateDescriptors of the broadcast states
    broadcast_state_descriptors: tuple[Any, ...] = ()

    def validate(self) -> None:
        if not isinstance(self.broadcast_state_descriptors, tuple):
            self._fail("broadcast_state_descriptors",
                       f"must be a tuple of MapStateDescriptor, got {self.broadcast_state_descriptors!r}")


@dataclass(frozen=True, eq=False, kw_only=True)
class KeyedBroadcastProcessSpec(BroadcastProcessSpec):
    """The same with input 1 keyed: a KeyedBroadcastProcessFunction."""

    KINDS = ("keyed_broadcast_process",)

    #: input 1's KeySelector
    key_selector: Optional[KeySelectorLike] = None

    def validate(self) -> None:
        super().validate()
        self._check_callable("key_selector", required=True)


# ---------------------------------------------------------------------- others
@dataclass(frozen=True, eq=False, kw_only=True)
class TimestampsWatermarksSpec(OperatorSpec):
    """``assign_timestamps_and_watermarks()``."""

    KINDS = ("timestamps_watermarks",)
    NEEDS_FUNCTION = False

    #: the WatermarkStrategy
    watermark_strategy: Any = None

    def validate(self) -> None:
        self._require("watermark_strategy")


@dataclass(frozen=True, eq=False, kw_only=True)
class AsyncWaitSpec(OperatorSpec):
    """``AsyncDataStream.(un)ordered_wait(_with_retry)``: an AsyncFunction, many calls in flight."""

    KINDS = ("async_wait",)

    #: ms before a call times out (0: never; allowed without retries, as in PyFlink)
    timeout: int = 0
    #: calls in flight per subtask
    capacity: int = 100
    #: "ORDERED" (results in input order) or "UNORDERED" (as calls complete)
    output_mode: str = "ORDERED"
    #: the AsyncRetryStrategy (None: no retries)
    retry_strategy: Any = None
    #: the KeyedStream's KeySelector (None on a plain DataStream)
    key_selector: Optional[KeySelectorLike] = None

    def validate(self) -> None:
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int) or self.timeout < 0:
            self._fail("timeout", f"must be an int >= 0 (ms), got {self.timeout!r}")
        if isinstance(self.capacity, bool) or not isinstance(self.capacity, int) or self.capacity < 1:
            self._fail("capacity", f"must be an int >= 1, got {self.capacity!r}")
        self._check_one_of("output_mode", OUTPUT_MODES)
        self._check_callable("key_selector")


#: every spec class, one per operator (the runtime's operator registry has one entry per class)
SPEC_CLASSES: tuple[type[OperatorSpec], ...] = (
    SourceSpec, MapSpec, FlatMapSpec, FilterSpec, ProcessSpec, KeyedProcessSpec, ReduceSpec,
    AggregationSpec, WindowSpec, CoMapSpec, CoFlatMapSpec, CoProcessSpec, KeyedCoProcessSpec,
    BroadcastProcessSpec, KeyedBroadcastProcessSpec, TimestampsWatermarksSpec, AsyncWaitSpec, SinkSpec,
)

_BY_KIND = {kind: cls for cls in SPEC_CLASSES for kind in cls.KINDS}


def spec_class_for_kind(kind: str) -> type[OperatorSpec]:
    """The spec class of operator ``kind`` (``map`` -> MapSpec); InvalidProgramError if unknown."""
    cls = _BY_KIND.get(kind)
    if cls is None:
        raise InvalidProgramError(f"unknown operator kind {kind!r}; known kinds: {', '.join(sorted(_BY_KIND))}")
    return cls
