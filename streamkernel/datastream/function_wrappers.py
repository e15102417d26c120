"""Wrappers that turn a plain callable into the Function class an operator expects.

PyFlink accepts a plain callable (a lambda, a function) instead of a Function object for
``map``, ``flat_map``, ``filter``, ``key_by``, ``reduce`` (keyed and windowed) and
``partition_custom``; everywhere else it requires the Function class. The DataStream API
normalises both forms here, so an :class:`~streamkernel.graph.operator_specs.OperatorSpec`
always holds a Function object and the runtime has one shape to call.

A wrapper binds the callable as the instance's method attribute (``wrapper.map is func``),
so calling through the wrapper costs nothing on the hot path.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

from streamkernel.datastream.function_base import (
    FilterFunction,
    FlatMapFunction,
    Function,
    KeySelector,
    MapFunction,
    Partitioner,
    ReduceFunction,
)
from streamkernel.errors import InvalidFunctionError

__all__ = [
    "FunctionWrapper",
    "MapFunctionWrapper",
    "FlatMapFunctionWrapper",
    "FilterFunctionWrapper",
    "KeySelectorWrapper",
    "ReduceFunctionWrapper",
    "PartitionerWrapper",
    "as_function",
    "require_function",
    "describe_function",
]


class FunctionWrapper(Function):
    """A Function that delegates to a user's plain callable (``wrapper._func``)."""

    #: the name of the interface method the callable stands for
    method_name: str = ""

    def __init__(self, func: Callable[..., Any]) -> None:
        self._func = func
        # Shadow the class's method with the callable itself: no extra call per record.
        setattr(self, self.method_name, func)

    @property
    def wrapped(self) -> Callable[..., Any]:
        """The user's callable."""
        return self._func

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self._func, '__qualname__', self._func)!r})"


class MapFunctionWrapper(FunctionWrapper, MapFunction):
    """A MapFunction whose ``map`` is the user's callable."""

    method_name = "map"

    def map(self, value: Any) -> Any:  # replaced per instance by the callable
        """``func(value)``."""
        return self._func(value)


class FlatMapFunctionWrapper(FunctionWrapper, FlatMapFunction):
    """A FlatMapFunction whose ``flat_map`` is the user's callable (returning an iterable)."""

    method_name = "flat_map"

    def flat_map(self, value: Any) -> Any:  # replaced per instance by the callable
        """``func(value)``."""
        return self._func(value)


class FilterFunctionWrapper(FunctionWrapper, FilterFunction):
    """A FilterFunction whose ``filter`` is the user's predicate."""

    method_name = "filter"

    def filter(self, value: Any) -> bool:  # replaced per instance by the callable
        """``func(value)``."""
        return self._func(value)


class KeySelectorWrapper(FunctionWrapper, KeySelector):
    """A KeySelector whose ``get_key`` is the user's callable."""

    method_name = "get_key"

    def get_key(self, value: Any) -> Any:  # replaced per instance by the callable
        """``func(value)``."""
        return self._func(value)

    def __call__(self, value: Any) -> Any:
        return self._func(value)


class ReduceFunctionWrapper(FunctionWrapper, ReduceFunction):
    """A ReduceFunction whose ``reduce`` is the user's two-argument callable."""

    method_name = "reduce"

    def reduce(self, value1: Any, value2: Any) -> Any:  # replaced per instance by the callable
        """``func(value1, value2)``."""
        return self._func(value1, value2)


class PartitionerWrapper(FunctionWrapper, Partitioner):
    """A Partitioner whose ``partition`` is the user's ``(key, num_partitions) -> int`` callable."""

    method_name = "partition"

    def partition(self, key: Any, num_partitions: int) -> int:  # replaced per instance by the callable
        """``func(key, num_partitions)``."""
        return self._func(key, num_partitions)


_WRAPPERS: dict[type, type[FunctionWrapper]] = {
    MapFunction: MapFunctionWrapper,
    FlatMapFunction: FlatMapFunctionWrapper,
    FilterFunction: FilterFunctionWrapper,
    KeySelector: KeySelectorWrapper,
    ReduceFunction: ReduceFunctionWrapper,
    Partitioner: PartitionerWrapper,
}


def _type_name(obj: Any) -> str:
    if obj is None:
        return "None"
    if isinstance(obj, type):
        return f"class {obj.__name__}"
    return type(obj).__name__


def as_function(func: Any, function_class: type, call: str, argument: str = "func") -> Any:
    """``func`` if it is a ``function_class``; a callable wrapped in one; else a clear error.

    ``call`` names the API method for the message, e.g. ``"map()"``.
    """
    if isinstance(func, function_class):
        return func
    if isinstance(func, type) and issubclass(func, Function):
        raise InvalidFunctionError(
            f"{call} expects a {function_class.__name__} instance or a callable for {argument!r}, got "
            f"the class {func.__name__} itself: pass an instance, {func.__name__}()")
    if callable(func) and not isinstance(func, Function):
        return _WRAPPERS[function_class](func)
    raise InvalidFunctionError(
        f"{call} expects a {function_class.__name__} or a callable for {argument!r}, got "
        f"{_type_name(func)}: {func!r}")


def require_function(func: Any, expected: Union[type, tuple[type, ...]], call: str,
                     hint: Optional[str] = None) -> Any:
    """``func`` if it is an instance of ``expected``; else an error naming the call and the class."""
    if isinstance(func, expected):
        return func
    classes = expected if isinstance(expected, tuple) else (expected,)
    wanted = " or ".join(c.__name__ for c in classes)
    article = "an" if wanted[0] in "AEIOU" else "a"
    message = f"{call} expects {article} {wanted}, got {_type_name(func)}"
    if isinstance(func, type) and issubclass(func, classes):
        message += f": pass an instance, {func.__name__}()"
    elif callable(func) and not isinstance(func, (Function, type)):
        message += f": subclass {classes[0].__name__} and implement its methods"
    raise InvalidFunctionError(message + (f". {hint}" if hint else ""))


def describe_function(func: Any, interface: Optional[type] = None) -> str:
    """The class name shown in operator names: the user's class, or the interface for a callable."""
    if isinstance(func, FunctionWrapper):
        for base, wrapper in _WRAPPERS.items():
            if isinstance(func, wrapper):
                return base.__name__
    if func is None:
        return interface.__name__ if interface is not None else "None"
    return type(func).__name__
