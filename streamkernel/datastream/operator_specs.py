"""How the DataStream API builds the typed operator specs of ``streamkernel.graph.operator_specs``.

Every operator the API creates (except sources, which the environment creates as a
``SourceSpec``) is built by one function of this module. ``function`` is always a Function
object (plain callables are wrapped, see ``function_wrappers``); keyed operators also carry
their KeySelector as the transformation's ``state_key_selector`` (or
``state_key_selector1``/``2``). What each kind's fields mean is documented on its spec class.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from streamkernel.datastream.function_base import Function, KeySelector
from streamkernel.graph.operator_specs import (
    AggregationSpec,
    BroadcastProcessSpec,
    KeyedBroadcastProcessSpec,
    KeyedSpec,
    OneInputSpec,
    OperatorSpec,
    ProcessSpec,
    SinkSpec,
    TimestampsWatermarksSpec,
    TwoInputSpec,
    WindowSpec,
    spec_class_for_kind,
)

__all__ = [
    "one_input_spec",
    "keyed_spec",
    "aggregation_spec",
    "window_spec",
    "two_input_spec",
    "broadcast_spec",
    "timestamps_watermarks_spec",
    "sink_spec",
]


def one_input_spec(kind: str, function: Function, key_selector: Optional[KeySelector] = None) -> OperatorSpec:
    """map / flat_map / filter (``key_selector`` set on a KeyedStream) / process."""
    cls = spec_class_for_kind(kind)
    if cls is ProcessSpec:
        return ProcessSpec(function=function)
    assert issubclass(cls, OneInputSpec), kind
    return cls(function=function, key_selector=key_selector)


def keyed_spec(kind: str, function: Function, key_selector: KeySelector) -> OperatorSpec:
    """keyed_process / reduce: always keyed."""
    cls = spec_class_for_kind(kind)
    assert issubclass(cls, KeyedSpec), kind
    return cls(function=function, key_selector=key_selector)


def aggregation_spec(function: Function, key_selector: KeySelector, aggregation_type: str,
                     field: Any) -> AggregationSpec:
    """sum / min / max / min_by / max_by on a KeyedStream."""
    return AggregationSpec(function=function, key_selector=key_selector, aggregation_type=aggregation_type,
                           field=field)


def window_spec(*, count: bool, function: Optional[Function], key_selector: KeySelector, window_assigner: Any,
                trigger: Any, allowed_lateness: int, late_data_output_tag: Any, window_state: str,
                window_function: Function, internal_window_function: Function,
                accumulator_type: Any = None, non_keyed: bool = False) -> WindowSpec:
    """A window operator (``count_window`` kind for count assigners)."""
    return WindowSpec(
        count=count, function=function, key_selector=key_selector, window_assigner=window_assigner,
        trigger=trigger, allowed_lateness=allowed_lateness, late_data_output_tag=late_data_output_tag,
        window_state=window_state, window_function=window_function,
        internal_window_function=internal_window_function, accumulator_type=accumulator_type,
        non_keyed=non_keyed)


def two_input_spec(kind: str, function: Function, key_selector1: Optional[KeySelector] = None,
                   key_selector2: Optional[KeySelector] = None) -> OperatorSpec:
    """co_map / co_flat_map / co_process / keyed_co_process."""
    cls = spec_class_for_kind(kind)
    assert issubclass(cls, TwoInputSpec), kind
    return cls(function=function, key_selector1=key_selector1, key_selector2=key_selector2)


def broadcast_spec(function: Function, descriptors: Sequence[Any],
                   key_selector: Optional[KeySelector] = None) -> BroadcastProcessSpec:
    """broadcast_process, or keyed_broadcast_process when ``key_selector`` is given."""
    if key_selector is not None:
        return KeyedBroadcastProcessSpec(function=function, broadcast_state_descriptors=tuple(descriptors),
                                         key_selector=key_selector)
    return BroadcastProcessSpec(function=function, broadcast_state_descriptors=tuple(descriptors))


def timestamps_watermarks_spec(watermark_strategy: Any) -> TimestampsWatermarksSpec:
    """assign_timestamps_and_watermarks."""
    return TimestampsWatermarksSpec(watermark_strategy=watermark_strategy)


def sink_spec(sink: Any, input_type: Any = None) -> SinkSpec:
    """print / add_sink / sink_to; ``input_type`` is the declared type of the records written
    (it decides their text in print() and SimpleStringEncoder, as in PyFlink)."""
    return SinkSpec(sink=sink, input_type=input_type)
