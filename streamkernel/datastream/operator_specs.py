"""What the DataStream API puts into each :class:`OperatorSpec`: the contract with the runtime.

Every operator the API creates (except sources, which the environment creates) is built
by one function of this module, so this table is complete. ``function`` is always a
Function object (plain callables are wrapped, see ``function_wrappers``); keyed operators
also carry their KeySelector as the transformation's ``state_key_selector`` (or
``state_key_selector1``/``2``) and, for convenience, in ``params``.

====================== ========================== ================================== ==============================================
kind                   built by                   function                           params
====================== ========================== ================================== ==============================================
map                    map(), project()           MapFunction: ``map(v)`` -> 1 result ``key_selector`` on a KeyedStream
flat_map               flat_map()                 FlatMapFunction: ``flat_map(v)``    ``key_selector`` on a KeyedStream
                                                  -> iterable of results
filter                 filter()                   FilterFunction: ``filter(v)``       ``key_selector`` on a KeyedStream
                                                  -> keep v if truthy
process                DataStream.process()       ProcessFunction                    (none)
keyed_process          KeyedStream.process()      KeyedProcessFunction               ``key_selector``
reduce                 KeyedStream.reduce()       ReduceFunction: emits the running  ``key_selector``
                                                  reduction per record
aggregation            sum/min/max/min_by/max_by  ReduceFunction implementing the    ``key_selector``, ``aggregation_type`` (SUM,
                                                  aggregation (run it like reduce)   MIN, MAX, MIN_BY, MAX_BY), ``field`` (int|str)
window                 WindowedStream and         ReduceFunction (reduce),           ``key_selector``, ``window_assigner``,
count_window           AllWindowedStream reduce/  AggregateFunction (aggregate), or  ``trigger``, ``allowed_lateness`` (ms, 0 for
(count assigners)      aggregate/apply/process    None (apply/process: buffer all)   processing time), ``late_data_output_tag``
                                                                                     (OutputTag|None), ``window_state`` ("reducing",
                                                                                     "aggregating", "list"), ``window_function``
                                                                                     (user's or pass-through), ``internal_window_
                                                                                     function`` (call this one), ``accumulator_type``,
                                                                                     ``non_keyed`` (True for window_all: key is 0)
co_map                 ConnectedStreams.map()     CoMapFunction: map1/map2           ``key_selector1``/``2`` when both keyed
co_flat_map            ConnectedStreams.flat_map  CoFlatMapFunction                  ``key_selector1``/``2`` when both keyed
co_process             ConnectedStreams.process   CoProcessFunction                  (none)
keyed_co_process       same, both inputs keyed    KeyedCoProcessFunction or          ``key_selector1``, ``key_selector2``
                                                  CoProcessFunction
broadcast_process      BroadcastConnectedStream   BroadcastProcessFunction           ``broadcast_state_descriptors`` (tuple of
                       .process (input 2 =                                           MapStateDescriptor)
                       broadcast side)
keyed_broadcast_process same, input 1 keyed       KeyedBroadcastProcessFunction      ``broadcast_state_descriptors``,
                                                                                     ``key_selector`` (of input 1)
timestamps_watermarks  assign_timestamps_and_     None                               ``watermark_strategy`` (WatermarkStrategy)
                       watermarks()
sink                   print(), add_sink(),       None                               ``sink``: PrintSink, Sink, or SinkFunction (a
                       sink_to()                                                     plain callable given to add_sink is wrapped
                                                                                     in SinkFunction: call it per record);
                                                                                     ``input_type``: the records' declared
                                                                                     TypeInformation (None: not declared)
====================== ========================== ================================== ==============================================

Side outputs: any function may emit ``yield output_tag, value`` (PyFlink) or call
``ctx.output(output_tag, value)``; ``get_side_output(tag)`` edges carry the tag.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from streamkernel.datastream.function_base import Function, KeySelector
from streamkernel.graph.transformations import OperatorSpec

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
    """map / flat_map / filter / process (``key_selector`` set on a KeyedStream)."""
    params = {"key_selector": key_selector} if key_selector is not None else {}
    return OperatorSpec(kind, function, params)


def keyed_spec(kind: str, function: Function, key_selector: KeySelector) -> OperatorSpec:
    """keyed_process / reduce: always keyed."""
    return OperatorSpec(kind, function, {"key_selector": key_selector})


def aggregation_spec(function: Function, key_selector: KeySelector, aggregation_type: str,
                     field: Any) -> OperatorSpec:
    """sum / min / max / min_by / max_by on a KeyedStream."""
    return OperatorSpec("aggregation", function, {
        "key_selector": key_selector, "aggregation_type": aggregation_type, "field": field})


def window_spec(*, count: bool, function: Optional[Function], key_selector: KeySelector, window_assigner: Any,
                trigger: Any, allowed_lateness: int, late_data_output_tag: Any, window_state: str,
                window_function: Function, internal_window_function: Function,
                accumulator_type: Any = None, non_keyed: bool = False) -> OperatorSpec:
    """A window operator (``count_window`` kind for count assigners)."""
    return OperatorSpec("count_window" if count else "window", function, {
        "key_selector": key_selector,
        "window_assigner": window_assigner,
        "trigger": trigger,
        "allowed_lateness": allowed_lateness,
        "late_data_output_tag": late_data_output_tag,
        "window_state": window_state,
        "window_function": window_function,
        "internal_window_function": internal_window_function,
        "accumulator_type": accumulator_type,
        "non_keyed": non_keyed,
    })


def two_input_spec(kind: str, function: Function, key_selector1: Optional[KeySelector] = None,
                   key_selector2: Optional[KeySelector] = None) -> OperatorSpec:
    """co_map / co_flat_map / co_process / keyed_co_process."""
    params = {}
    if key_selector1 is not None or key_selector2 is not None:
        params = {"key_selector1": key_selector1, "key_selector2": key_selector2}
    return OperatorSpec(kind, function, params)


def broadcast_spec(function: Function, descriptors: Sequence[Any],
                   key_selector: Optional[KeySelector] = None) -> OperatorSpec:
    """broadcast_process, or keyed_broadcast_process when ``key_selector`` is given."""
    params: dict[str, Any] = {"broadcast_state_descriptors": tuple(descriptors)}
    if key_selector is not None:
        params["key_selector"] = key_selector
        return OperatorSpec("keyed_broadcast_process", function, params)
    return OperatorSpec("broadcast_process", function, params)


def timestamps_watermarks_spec(watermark_strategy: Any) -> OperatorSpec:
    """assign_timestamps_and_watermarks."""
    return OperatorSpec("timestamps_watermarks", None, {"watermark_strategy": watermark_strategy})


def sink_spec(sink: Any, input_type: Any = None) -> OperatorSpec:
    """print / add_sink / sink_to; ``input_type`` is the declared type of the records written
    (it decides their text in print() and SimpleStringEncoder, as in PyFlink)."""
    return OperatorSpec("sink", None, {"sink": sink, "input_type": input_type})
