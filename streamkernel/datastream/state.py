"""State: the interfaces user functions read and write state through, and the descriptors that name it.

Keyed state (:class:`ValueState`, :class:`ListState`, :class:`MapState`,
:class:`ReducingState`, :class:`AggregatingState`) is scoped to the key of the current
element; operator state (list, union list, :class:`BroadcastState`) belongs to one parallel
instance. A *descriptor* names a state and says what it holds; the runtime context turns it
into a state object::

    class CountPerKey(KeyedProcessFunction):
        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value, ctx):
            self.count.update((self.count.value() or 0) + 1)
            yield value, self.count.value()

Everything here is an interface: the state backends in ``streamkernel.runtime.state``
implement it. Type information is accepted and kept, never required.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Dict, Generic, Iterable, Iterator, List, Optional, Tuple, TypeVar

from streamkernel.datastream.state_ttl_config import StateTtlConfig
from streamkernel.common.typeinfo import TypeInformation
from streamkernel.errors import InvalidArgumentTypeError, InvalidFunctionError, InvalidProgramError

__all__ = [
    "OperatorStateStore",
    "State",
    "ValueState",
    "AppendingState",
    "MergingState",
    "ReducingState",
    "AggregatingState",
    "ListState",
    "MapState",
    "ReadOnlyBroadcastState",
    "BroadcastState",
    "StateDescriptor",
    "ValueStateDescriptor",
    "ListStateDescriptor",
    "MapStateDescriptor",
    "ReducingStateDescriptor",
    "AggregatingStateDescriptor",
    "StateTtlConfig",
]

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
IN = TypeVar("IN")
OUT = TypeVar("OUT")


class OperatorStateStore(ABC):
    """Access to the operator state of one parallel operator instance.

    Operator state is not scoped to a key: list state is split across instances on rescale,
    union list state is given whole to every instance, broadcast state is the same everywhere.
    """

    @abstractmethod
    def get_broadcast_state(self, state_descriptor: "MapStateDescriptor") -> "BroadcastState":
        """Return the read/write :class:`BroadcastState` described by ``state_descriptor``."""

    @abstractmethod
    def get_list_state(self, state_descriptor: "ListStateDescriptor") -> "ListState":
        """Return operator list state, redistributed round-robin when the parallelism changes."""

    @abstractmethod
    def get_union_list_state(self, state_descriptor: "ListStateDescriptor") -> "ListState":
        """Return operator list state whose full union is given to every instance on restore."""


class State(ABC):
    """The interface every kind of partitioned state implements."""

    @abstractmethod
    def clear(self) -> None:
        """Remove the value mapped under the current key."""


class ValueState(State, Generic[T]):
    """State holding a single value for the current key; ``value()`` is None until updated."""

    @abstractmethod
    def value(self) -> T:
        """Return the value for the current key, or None if there is none."""

    @abstractmethod
    def update(self, value: T) -> None:
        """Set the value for the current key; updating with None removes it."""


class AppendingState(State, Generic[IN, OUT]):
    """State that supports adding elements and reading the current (buffered or aggregated) result."""

    @abstractmethod
    def get(self) -> OUT:
        """Return the current result under the current key."""

    @abstractmethod
    def add(self, value: IN) -> None:
        """Add ``value`` to the state of the current key."""


class MergingState(AppendingState[IN, OUT]):
    """:class:`AppendingState` whose instances for several namespaces (windows) can be merged."""


class ReducingState(MergingState[T, T]):
    """State that combines added elements into one value with a reduce function."""


class AggregatingState(MergingState[IN, OUT]):
    """State that pre-aggregates added elements into an accumulator with an AggregateFunction.

    ``get()`` returns ``AggregateFunction.get_result`` of the accumulator.
    """


class ListState(MergingState[T, Iterable[T]]):
    """State holding a list of elements for the current key (or for the operator instance)."""

    @abstractmethod
    def update(self, values: List[T]) -> None:
        """Replace the list with ``values``."""

    @abstractmethod
    def add_all(self, values: List[T]) -> None:
        """Append ``values`` to the list."""

    def __iter__(self) -> Iterator[T]:
        return iter(self.get() or [])


class MapState(State, Generic[K, V]):
    """State holding a map of user keys to values for the current key."""

    @abstractmethod
    def get(self, key: K) -> V:
        """Return the value mapped to ``key``, or None."""

    @abstractmethod
    def put(self, key: K, value: V) -> None:
        """Map ``key`` to ``value``."""

    @abstractmethod
    def put_all(self, dict_value: Dict[K, V]) -> None:
        """Copy every mapping of ``dict_value`` into the state."""

    @abstractmethod
    def remove(self, key: K) -> None:
        """Delete the mapping of ``key``."""

    @abstractmethod
    def contains(self, key: K) -> bool:
        """Return whether ``key`` has a mapping."""

    @abstractmethod
    def items(self) -> Iterable[Tuple[K, V]]:
        """Return all (key, value) mappings."""

    @abstractmethod
    def keys(self) -> Iterable[K]:
        """Return all keys."""

    @abstractmethod
    def values(self) -> Iterable[V]:
        """Return all values."""

    @abstractmethod
    def is_empty(self) -> bool:
        """Return True if there are no mappings."""

    def __getitem__(self, key: K) -> V:
        return self.get(key)

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)

    def __contains__(self, key: K) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


class ReadOnlyBroadcastState(State, Generic[K, V]):
    """A read-only view of :class:`BroadcastState`, given to the non-broadcast side.

    Do not modify the values it returns: they are not copies.
    """

    @abstractmethod
    def get(self, key: K) -> V:
        """Return the value mapped to ``key``, or None."""

    @abstractmethod
    def contains(self, key: K) -> bool:
        """Return whether ``key`` has a mapping."""

    @abstractmethod
    def items(self) -> Iterable[Tuple[K, V]]:
        """Return all (key, value) mappings."""

    @abstractmethod
    def keys(self) -> Iterable[K]:
        """Return all keys."""

    @abstractmethod
    def values(self) -> Iterable[V]:
        """Return all values."""

    @abstractmethod
    def is_empty(self) -> bool:
        """Return True if there are no mappings."""

    def __getitem__(self, key: K) -> V:
        return self.get(key)

    def __contains__(self, key: K) -> bool:
        return self.contains(key)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())


class BroadcastState(ReadOnlyBroadcastState[K, V]):
    """Map state of a broadcast stream, held identically by every parallel instance.

    The user must make sure every instance stores the same elements: on restore and rescale
    each instance gets a copy of one instance's state.
    """

    @abstractmethod
    def put(self, key: K, value: V) -> None:
        """Map ``key`` to ``value``."""

    @abstractmethod
    def put_all(self, dict_value: Dict[K, V]) -> None:
        """Copy every mapping of ``dict_value`` into the state."""

    @abstractmethod
    def remove(self, key: K) -> None:
        """Delete the mapping of ``key``."""

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)

    def __delitem__(self, key: K) -> None:
        self.remove(key)


class StateDescriptor(ABC):
    """Names a state and says what it holds; the runtime context creates the state from it.

    Two descriptors are equal when they are of the same kind and have the same name.
    """

    def __init__(self, name: str, type_info: Any = None) -> None:
        if not isinstance(name, str) or not name:
            error = InvalidProgramError if isinstance(name, str) else InvalidArgumentTypeError
            raise error(
                f"{type(self).__name__}: name must be a non-empty str, got {name!r}"
            )
        self.name = name
        for argument, value in _type_arguments(type(self), type_info):
            if value is not None and not isinstance(value, TypeInformation):
                raise InvalidArgumentTypeError(
                    f"{type(self).__name__}('{name}'): {argument} must be a TypeInformation "
                    f"(e.g. Types.INT()), got {type(value).__name__}: {value!r}"
                    + (" (did you forget the parentheses?)" if callable(value) else ""))
        self.type_info = type_info
        self._ttl_config: Optional[StateTtlConfig] = None

    def get_name(self) -> str:
        """The name of the state."""
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        """Let values of this state expire as ``ttl_config`` says (see :class:`StateTtlConfig`)."""
        if not isinstance(ttl_config, StateTtlConfig):
            raise InvalidArgumentTypeError(
                f"{type(self).__name__}('{self.name}').enable_time_to_live: ttl_config must "
                "be a StateTtlConfig (StateTtlConfig.new_builder(ttl).build()), "
                f"got {type(ttl_config).__name__}"
            )
        self._ttl_config = ttl_config

    def get_ttl_config(self) -> Optional[StateTtlConfig]:
        """The TTL configuration set with :meth:`enable_time_to_live`, or None."""
        return self._ttl_config

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}('{self.name}')"


def _type_arguments(kind: type, type_info: Any) -> list[tuple[str, Any]]:
    """The type arguments of a descriptor's constructor, by PyFlink's parameter names."""
    if kind.__name__ == "MapStateDescriptor" and isinstance(type_info, tuple):
        return [("key_type_info", type_info[0]), ("value_type_info", type_info[1])]
    names = {"ValueStateDescriptor": "value_type_info", "ListStateDescriptor": "elem_type_info",
             "AggregatingStateDescriptor": "state_type_info"}
    return [(names.get(kind.__name__, "type_info"), type_info)]


class ValueStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`ValueState` (``runtime_context.get_state(descriptor)``)."""

    def __init__(self, name: str, value_type_info: Any = None) -> None:
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`ListState`; ``type_info`` is the element type."""

    def __init__(self, name: str, elem_type_info: Any = None) -> None:
        super().__init__(name, elem_type_info)
        self.elem_type_info = elem_type_info


class MapStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`MapState` or of a :class:`BroadcastState`.

    ``type_info`` is the pair ``(key_type_info, value_type_info)``.
    """

    def __init__(self, name: str, key_type_info: Any = None, value_type_info: Any = None) -> None:
        super().__init__(name, (key_type_info, value_type_info))
        self.key_type_info = key_type_info
        self.value_type_info = value_type_info


class ReducingStateDescriptor(StateDescriptor):
    """Descriptor of a :class:`ReducingState`.

    ``reduce_function`` is a ``ReduceFunction`` or a plain callable ``(a, b) -> c``; it is
    kept as given (:meth:`get_reduce_function`) and the runtime adapts it.
    """

    def __init__(self, name: str, reduce_function: Any, type_info: Any = None) -> None:
        super().__init__(name, type_info)
        reduce = getattr(reduce_function, "reduce", None)
        if not callable(reduce) and not callable(reduce_function):
            raise InvalidFunctionError(
                f"ReducingStateDescriptor('{name}'): reduce_function must be a ReduceFunction "
                f"or a callable (a, b) -> c, got {type(reduce_function).__name__}"
            )
        self._reduce_function = reduce_function

    def get_reduce_function(self) -> Any:
        """The reduce function, as given (a ReduceFunction or a callable)."""
        return self._reduce_function


class AggregatingStateDescriptor(StateDescriptor):
    """Descriptor of an :class:`AggregatingState`; ``state_type_info`` is the accumulator type.

    ``agg_function`` is an ``AggregateFunction`` (create_accumulator, add, get_result, merge).
    """

    def __init__(self, name: str, agg_function: Any, state_type_info: Any = None) -> None:
        super().__init__(name, state_type_info)
        missing = [
            method
            for method in ("create_accumulator", "add", "get_result")
            if not callable(getattr(agg_function, method, None))
        ]
        if missing:
            raise InvalidFunctionError(
                f"AggregatingStateDescriptor('{name}'): agg_function must be an "
                f"AggregateFunction; {type(agg_function).__name__} lacks {', '.join(missing)}"
            )
        self._agg_function = agg_function

    def get_agg_function(self) -> Any:
        """The AggregateFunction, as given."""
        return self._agg_function
