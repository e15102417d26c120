"""Typed operator specs: checked when built, one class per operator kind the runtime runs."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

from streamkernel.errors import InvalidProgramError
from streamkernel.graph.operator_specs import (
    SPEC_CLASSES,
    AggregationSpec,
    AsyncWaitSpec,
    BroadcastProcessSpec,
    CoMapSpec,
    FilterSpec,
    KeyedBroadcastProcessSpec,
    KeyedCoProcessSpec,
    KeyedProcessSpec,
    MapSpec,
    OperatorSpec,
    ReduceSpec,
    SinkSpec,
    SourceSpec,
    TimestampsWatermarksSpec,
    WindowSpec,
    spec_class_for_kind,
)
from streamkernel.runtime.core.registry import resolve
from streamkernel.runtime.operators.base import StreamOperator
from streamkernel.runtime.operators.factory import OPERATOR_CLASSES

#: every operator kind the DataStream API creates (the kinds of the old params table)
KINDS = {
    "source", "map", "flat_map", "filter", "process", "keyed_process", "reduce", "aggregation", "window",
    "count_window", "co_map", "co_flat_map", "co_process", "keyed_co_process", "broadcast_process",
    "keyed_broadcast_process", "timestamps_watermarks", "async_wait", "sink",
}


def _window(**changes):
    fields = dict(function=None, key_selector=str, window_assigner=object(), trigger=object(), allowed_lateness=0,
                  window_state="list", internal_window_function=object())
    fields.update(changes)
    return WindowSpec(**fields)


BAD_SPECS = [
    (lambda: MapSpec(function=str, key_selector=5), r"^map operator: key_selector must be callable .*got 5 \(int\)$"),
    (lambda: FilterSpec(key_selector=str), r"^filter operator: function is required \(got None\)$"),
    (lambda: KeyedProcessSpec(function=str), r"^keyed_process operator: key_selector is required"),
    (lambda: ReduceSpec(function=max, key_selector="f0"), r"^reduce operator: key_selector must be callable"),
    (lambda: AggregationSpec(function=max, key_selector=str, aggregation_type="AVG"),
     r"^aggregation operator: aggregation_type must be one of 'SUM', .*got 'AVG'$"),
    (lambda: AggregationSpec(function=max, key_selector=str, field=1.5),
     r"^aggregation operator: field must be a position \(int\) or a field name \(str\), got 1.5$"),
    (lambda: _window(window_assigner=None), r"^window operator: window_assigner is required \(got None\)$"),
    (lambda: _window(trigger=None), r"^window operator: trigger is required"),
    (lambda: _window(internal_window_function=None), r"^window operator: internal_window_function is required"),
    (lambda: _window(count=True, allowed_lateness=-1), r"^count_window operator: allowed_lateness must be >= 0 ms, got -1$"),
    (lambda: _window(allowed_lateness=1.5), r"^window operator: allowed_lateness must be an int \(ms\), got 1.5$"),
    (lambda: _window(window_state="folding"), r"^window operator: window_state must be one of 'reducing', "),
    (lambda: _window(key_selector=0), r"^window operator: key_selector must be callable"),
    (lambda: CoMapSpec(function=str, key_selector1=str, key_selector2="x"), r"^co_map operator: key_selector2 must be"),
    (lambda: KeyedCoProcessSpec(function=str, key_selector1=str), r"^keyed_co_process operator: key_selector2 is required"),
    (lambda: BroadcastProcessSpec(function=str, broadcast_state_descriptors=["d"]),
     r"^broadcast_process operator: broadcast_state_descriptors must be a tuple"),
    (lambda: KeyedBroadcastProcessSpec(function=str), r"^keyed_broadcast_process operator: key_selector is required"),
    (lambda: TimestampsWatermarksSpec(), r"^timestamps_watermarks operator: watermark_strategy is required"),
    (lambda: AsyncWaitSpec(function=str, capacity=0), r"^async_wait operator: capacity must be an int >= 1, got 0$"),
    (lambda: AsyncWaitSpec(function=str, timeout=-5), r"^async_wait operator: timeout must be an int >= 0"),
    (lambda: AsyncWaitSpec(function=str, output_mode="FIFO"), r"^async_wait operator: output_mode must be one of"),
    (lambda: SourceSpec(), r"^source operator: source is required \(got None\)$"),
    (lambda: SinkSpec(input_type=None), r"^sink operator: sink is required \(got None\)$"),
]


@pytest.mark.parametrize("build, message", BAD_SPECS)
def test_a_bad_field_fails_when_the_spec_is_built_naming_kind_and_field(build, message) -> None:
    with pytest.raises(InvalidProgramError, match=message) as failure:
        build()
    assert "\n" not in str(failure.value)


def test_the_base_class_is_not_a_spec() -> None:
    with pytest.raises(TypeError, match="abstract"):
        OperatorSpec(function=str)


def test_specs_are_immutable_and_keyword_only() -> None:
    spec = MapSpec(function=str)
    with pytest.raises(AttributeError):
        spec.key_selector = str
    with pytest.raises(TypeError):
        MapSpec(str)


def test_every_kind_the_runtime_knows_has_a_spec_class_and_vice_versa() -> None:
    assert {kind for cls in SPEC_CLASSES for kind in cls.KINDS} == KINDS
    assert all(spec_class_for_kind(kind).KINDS.count(kind) == 1 for kind in KINDS)
    assert set(OPERATOR_CLASSES) == {cls.__name__ for cls in SPEC_CLASSES}
    for name, target in OPERATOR_CLASSES.items():
        operator_class = resolve(target)
        assert isinstance(operator_class, type) and issubclass(operator_class, StreamOperator), name
    with pytest.raises(InvalidProgramError, match="unknown operator kind 'fold'; known kinds: aggregation, "):
        spec_class_for_kind("fold")


def test_kind_source_and_sink_flags_follow_the_class() -> None:
    assert _window().kind == "window" and _window(count=True).kind == "count_window"
    assert SourceSpec(source=[1]).is_source and not SourceSpec(source=[1]).is_sink
    assert SinkSpec(sink=print).is_sink and not SinkSpec(sink=print).is_source
    assert not MapSpec(function=str).is_source and not MapSpec(function=str).is_sink


def test_specs_survive_cloudpickle_as_they_travel_to_task_managers() -> None:
    spec = _window(count=True, allowed_lateness=5, window_assigner=("assigner",), trigger=("trigger",),
                   internal_window_function=("internal",))
    copy = pickle.loads(cloudpickle.dumps(spec))
    assert type(copy) is WindowSpec and copy.kind == "count_window"
    assert (copy.allowed_lateness, copy.window_assigner, copy.internal_window_function) == (5, ("assigner",),
                                                                                            ("internal",))
