"""State interfaces, state descriptors and StateTtlConfig."""

from __future__ import annotations

from typing import Any

import pytest

from streamkernel.common.time import Duration, Time
from streamkernel.common.typeinfo import Types
from streamkernel.datastream.functions import AggregateFunction, ReduceFunction
from streamkernel.datastream.state import (
    AggregatingStateDescriptor,
    BroadcastState,
    ListState,
    ListStateDescriptor,
    MapState,
    MapStateDescriptor,
    OperatorStateStore,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueState,
    ValueStateDescriptor,
)
from streamkernel.errors import InvalidFunctionError, InvalidProgramError


class DictMapState(MapState):
    """The smallest MapState: the abstract methods over a dict."""

    def __init__(self) -> None:
        self.data: dict = {}

    def get(self, key: Any) -> Any:
        return self.data.get(key)

    def put(self, key: Any, value: Any) -> None:
        self.data[key] = value

    def put_all(self, dict_value: dict) -> None:
        self.data.update(dict_value)

    def remove(self, key: Any) -> None:
        self.data.pop(key, None)

    def contains(self, key: Any) -> bool:
        return key in self.data

    def items(self) -> Any:
        return self.data.items()

    def keys(self) -> Any:
        return self.data.keys()

    def values(self) -> Any:
        return self.data.values()

    def is_empty(self) -> bool:
        return not self.data

    def clear(self) -> None:
        self.data.clear()


class Sum(ReduceFunction):
    def reduce(self, a: int, b: int) -> int:
        return a + b


class Average(AggregateFunction):
    def create_accumulator(self) -> tuple:
        return 0, 0

    def add(self, value: int, accumulator: tuple) -> tuple:
        return accumulator[0] + value, accumulator[1] + 1

    def get_result(self, accumulator: tuple) -> float:
        return accumulator[0] / accumulator[1]

    def merge(self, a: tuple, b: tuple) -> tuple:
        return a[0] + b[0], a[1] + b[1]


def test_map_state_python_protocol_goes_through_the_interface() -> None:
    state = DictMapState()
    state["a"] = 1
    state.put_all({"b": 2, "c": 3})
    del state["c"]
    assert "a" in state and "c" not in state
    assert state["b"] == 2
    assert sorted(state) == ["a", "b"]


def test_list_state_iterates_its_elements_and_treats_none_as_empty() -> None:
    class Fixed(ListState):
        def __init__(self, elements: Any) -> None:
            self.elements = elements

        def get(self) -> Any:
            return self.elements

        def add(self, value: Any) -> None: ...

        def update(self, values: Any) -> None: ...

        def add_all(self, values: Any) -> None: ...

        def clear(self) -> None: ...

    assert list(Fixed([1, 2])) == [1, 2]
    assert list(Fixed(None)) == []


def test_interfaces_require_every_method() -> None:
    class HalfValue(ValueState):
        def value(self) -> Any:
            return 1

    class HalfBroadcast(BroadcastState):
        def get(self, key: Any) -> Any:
            return None

    class ListOnlyStore(OperatorStateStore):
        def get_broadcast_state(self, state_descriptor: Any) -> Any:
            return None

    for incomplete in (HalfValue, HalfBroadcast, ListOnlyStore):
        with pytest.raises(TypeError):
            incomplete()


def test_descriptors_keep_name_and_types_and_compare_by_kind_and_name() -> None:
    value = ValueStateDescriptor("count", Types.LONG())
    assert value.get_name() == "count" and value.type_info == Types.LONG()
    assert ValueStateDescriptor("count").type_info is None
    listing = ListStateDescriptor("items", Types.STRING())
    assert listing.elem_type_info == Types.STRING()
    mapping = MapStateDescriptor("rules", Types.STRING(), Types.INT())
    assert (mapping.key_type_info, mapping.value_type_info) == (Types.STRING(), Types.INT())
    assert value == ValueStateDescriptor("count")
    assert value != ListStateDescriptor("count")
    assert len({value, ValueStateDescriptor("count"), ValueStateDescriptor("other")}) == 2
    assert repr(mapping) == "MapStateDescriptor('rules')"


@pytest.mark.parametrize("name", ["", None, 3])
def test_descriptor_name_must_be_a_non_empty_string(name: Any) -> None:
    with pytest.raises(InvalidProgramError, match="name"):
        ValueStateDescriptor(name)


def test_reducing_descriptor_keeps_the_function_as_given() -> None:
    function = Sum()
    assert ReducingStateDescriptor("sum", function, Types.LONG()).get_reduce_function() is function
    plain = lambda a, b: a * b  # noqa: E731
    assert ReducingStateDescriptor("product", plain).get_reduce_function() is plain
    with pytest.raises(InvalidFunctionError, match="reduce_function"):
        ReducingStateDescriptor("bad", 42)


def test_aggregating_descriptor_needs_an_aggregate_function() -> None:
    function = Average()
    assert AggregatingStateDescriptor("avg", function, Types.TUPLE([Types.LONG(), Types.LONG()])) \
        .get_agg_function() is function
    with pytest.raises(InvalidFunctionError, match="create_accumulator"):
        AggregatingStateDescriptor("avg", lambda a, b: a)


def test_ttl_builder_defaults_match_flink() -> None:
    config = StateTtlConfig.new_builder(Time.seconds(10)).build()
    assert config.get_update_type() is StateTtlConfig.UpdateType.OnCreateAndWrite
    assert config.get_state_visibility() is StateTtlConfig.StateVisibility.NeverReturnExpired
    assert config.get_ttl_time_characteristic() is StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
    assert config.is_enabled()
    assert config.get_ttl() == Time.seconds(10) and config.get_ttl_millis() == 10_000
    strategies = config.get_cleanup_strategies()
    assert strategies.is_cleanup_in_background() and not strategies.in_full_snapshot()
    incremental = strategies.get_incremental_cleanup_strategy()
    assert (incremental.get_cleanup_size(), incremental.run_cleanup_for_every_record()) == (5, False)
    compaction = strategies.get_rocksdb_compact_filter_cleanup_strategy()
    assert compaction.get_query_time_after_num_entries() == 1000
    assert compaction.get_periodic_compaction_time().to_milliseconds() == 30 * 86_400_000


def test_ttl_builder_setters() -> None:
    config = (
        StateTtlConfig.new_builder(1000)
        .update_ttl_on_read_and_write()
        .return_expired_if_not_cleaned_up()
        .cleanup_full_snapshot()
        .cleanup_incrementally(10, True)
        .disable_cleanup_in_background()
        .set_ttl(Duration.of_minutes(1))
        .build()
    )
    assert config.get_update_type() is StateTtlConfig.UpdateType.OnReadAndWrite
    assert config.get_state_visibility() is StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
    assert config.get_ttl_millis() == 60_000
    strategies = config.get_cleanup_strategies()
    assert strategies.in_full_snapshot() and not strategies.is_cleanup_in_background()
    assert strategies.get_incremental_cleanup_strategy().get_cleanup_size() == 10
    assert strategies.get_rocksdb_compact_filter_cleanup_strategy() is None
    disabled = StateTtlConfig.new_builder(5).set_update_type(StateTtlConfig.UpdateType.Disabled).build()
    assert not disabled.is_enabled()


def test_ttl_validation() -> None:
    with pytest.raises(InvalidProgramError, match="ttl"):
        StateTtlConfig.new_builder(Time.seconds(0)).build()
    with pytest.raises(InvalidProgramError, match="ttl"):
        StateTtlConfig.new_builder("10 s").build()
    with pytest.raises(InvalidProgramError, match="cleanup_size"):
        StateTtlConfig.new_builder(5).cleanup_incrementally(0, False)
    with pytest.raises(InvalidProgramError, match="update_type"):
        StateTtlConfig.new_builder(5).set_update_type("OnReadAndWrite")  # type: ignore[arg-type]


def test_enable_time_to_live_attaches_the_config() -> None:
    descriptor = ValueStateDescriptor("last-seen")
    assert descriptor.get_ttl_config() is None
    ttl = StateTtlConfig.new_builder(Time.minutes(5)).build()
    descriptor.enable_time_to_live(ttl)
    assert descriptor.get_ttl_config() is ttl
    with pytest.raises(InvalidProgramError, match="StateTtlConfig"):
        descriptor.enable_time_to_live(Time.minutes(5))  # type: ignore[arg-type]
