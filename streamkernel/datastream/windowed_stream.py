"""WindowedStream and AllWindowedStream: a stream cut into windows, before the window function.

Both are pure API constructs, as in Flink: ``key_by(k).window(assigner)`` (or
``window_all(assigner)``) collects the assigner, trigger, allowed lateness and late-data
tag; ``reduce``/``aggregate``/``apply``/``process`` then creates one window operator
carrying all of it (see the ``window`` row of :mod:`streamkernel.datastream.operator_specs`).

The operator is named as Flink describes it, e.g.
``Window(TumblingEventTimeWindows(5000), EventTimeTrigger, ReduceFunction, PassThroughWindowFunction)``.
A non-keyed window (``window_all``) is keyed by a constant key (NullByteKeySelector) and
runs in a single subtask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from streamkernel.common.time import to_millis
from streamkernel.datastream.data_stream import DataStream, normalize_output_type
from streamkernel.datastream.function_base import AggregateFunction, Function, NullByteKeySelector, ReduceFunction
from streamkernel.datastream.function_window import (
    AllWindowFunction,
    InternalIterableAllWindowFunction,
    InternalIterableProcessAllWindowFunction,
    InternalIterableProcessWindowFunction,
    InternalIterableWindowFunction,
    InternalSingleValueAllWindowFunction,
    InternalSingleValueProcessAllWindowFunction,
    InternalSingleValueProcessWindowFunction,
    InternalSingleValueWindowFunction,
    PassThroughAllWindowFunction,
    PassThroughWindowFunction,
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from streamkernel.datastream.function_wrappers import as_function, describe_function, require_function
from streamkernel.datastream.operator_specs import window_spec
from streamkernel.errors import InvalidProgramError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from streamkernel.datastream.keyed_stream import KeyedStream

__all__ = ["WindowedStream", "AllWindowedStream"]


class _WindowedStreamBase:
    """What keyed and non-keyed windowed streams share: assigner, trigger, lateness, late tag."""

    #: "Window" or "AllWindow": the operator name's prefix
    _kind_name = "Window"
    #: the user's window function classes: (plain, process)
    _function_classes: tuple[type, type] = (WindowFunction, ProcessWindowFunction)
    _pass_through: type = PassThroughWindowFunction
    _single: tuple[type, type] = (InternalSingleValueWindowFunction, InternalSingleValueProcessWindowFunction)
    _iterable: tuple[type, type] = (InternalIterableWindowFunction, InternalIterableProcessWindowFunction)

    def __init__(self, keyed_stream: "KeyedStream", window_assigner: Any) -> None:
        self._check_assigner(window_assigner)
        self._keyed_stream = keyed_stream
        self._window_assigner = window_assigner
        self._allowed_lateness = 0
        self._late_data_output_tag: Any = None
        self._window_trigger: Any = None

    @classmethod
    def _check_assigner(cls, window_assigner: Any) -> None:
        from streamkernel.datastream.window import WindowAssigner

        if not isinstance(window_assigner, WindowAssigner):
            call = "window_all()" if cls._kind_name == "AllWindow" else "window()"
            raise InvalidProgramError(
                f"{call} expects a WindowAssigner (e.g. TumblingEventTimeWindows.of(Time.seconds(5))), "
                f"got {window_assigner!r}")

    def get_execution_environment(self) -> Any:
        """The StreamExecutionEnvironment of the windowed stream."""
        return self._keyed_stream.get_execution_environment()

    def get_input_type(self) -> Any:
        """The TypeInformation of the elements going into the windows."""
        return self._keyed_stream.get_type()

    def trigger(self, trigger: Any) -> Any:
        """Sets the Trigger deciding when a window fires (default: the assigner's)."""
        from streamkernel.datastream.window import MergingWindowAssigner, Trigger

        if not isinstance(trigger, Trigger):
            raise InvalidProgramError(f"trigger() expects a Trigger (e.g. CountTrigger.of(3)), got {trigger!r}")
        if isinstance(self._window_assigner, MergingWindowAssigner) and not trigger.can_merge():
            raise InvalidProgramError(
                f"A merging window assigner ({self._window_assigner}) cannot be used with a trigger that does "
                f"not support merging ({type(trigger).__name__})")
        self._window_trigger = trigger
        return self

    def allowed_lateness(self, time_ms: Any) -> Any:
        """Keeps windows for ``time_ms`` (int ms, Duration or Time) after the watermark passed
        their end; later elements are dropped (or go to ``side_output_late_data``).

        Only event-time windows have lateness; for processing-time windows it is ignored.
        """
        millis = to_millis(time_ms, "allowed_lateness(time_ms)")
        if millis < 0:
            raise InvalidProgramError(f"allowed_lateness(): the allowed lateness must be >= 0, got {millis} ms")
        self._allowed_lateness = millis if self._window_assigner.is_event_time() else 0
        return self

    def side_output_late_data(self, output_tag: Any) -> Any:
        """Sends elements that arrive too late for their window to the side output ``output_tag``."""
        from streamkernel.datastream.output_tag import OutputTag

        if not isinstance(output_tag, OutputTag):
            raise InvalidProgramError(f"side_output_late_data() expects an OutputTag, got {output_tag!r}")
        self._late_data_output_tag = output_tag
        return self

    # ---------------------------------------------------------------- build
    def _window_function(self, window_function: Any, call: str) -> tuple[Function, Function]:
        """(the user's window function or the pass-through, its single-value internal form)."""
        plain, process = self._function_classes
        if window_function is None:
            return self._pass_through(), self._single[0](self._pass_through())
        require_function(window_function, (plain, process), f"{call} window_function")
        index = 1 if isinstance(window_function, process) else 0
        return window_function, self._single[index](window_function)

    def _build(self, *, function: Optional[Function], window_state: str, window_function: Function,
               internal: Function, output_type: Any, func_desc: str, accumulator_type: Any = None) -> DataStream:
        from streamkernel.datastream.window import CountSlidingWindowAssigner, CountTumblingWindowAssigner

        env = self.get_execution_environment()
        trigger = self._window_trigger
        if trigger is None:
            trigger = self._window_assigner.get_default_trigger(env)
        key_selector = self._keyed_stream._key_selector()
        spec = window_spec(
            count=isinstance(self._window_assigner, (CountTumblingWindowAssigner, CountSlidingWindowAssigner)),
            function=function, key_selector=key_selector, window_assigner=self._window_assigner,
            trigger=trigger, allowed_lateness=self._allowed_lateness,
            late_data_output_tag=self._late_data_output_tag, window_state=window_state,
            window_function=window_function, internal_window_function=internal,
            accumulator_type=accumulator_type, non_keyed=self._kind_name == "AllWindow")
        name = f"{self._kind_name}({self._window_assigner}, {type(trigger).__name__}, {func_desc})"
        result = self._keyed_stream._one_input(name, spec, output_type)
        result._transformation.description = name
        if self._kind_name == "AllWindow":
            result.force_non_parallel()
        return result

    def reduce(self, reduce_function: Union[Callable[[Any, Any], Any], ReduceFunction],
               window_function: Any = None, output_type: Any = None) -> DataStream:
        """Reduces each window incrementally to one value (then ``window_function``, if given)."""
        f = as_function(reduce_function, ReduceFunction, "reduce()", "reduce_function")
        user_wf, internal = self._window_function(window_function, "reduce()")
        if window_function is None and output_type is None:
            output_type = self.get_input_type()
        return self._build(function=f, window_state="reducing", window_function=user_wf, internal=internal,
                           output_type=normalize_output_type(output_type, "reduce()"),
                           func_desc=f"{describe_function(f)}, {describe_function(user_wf)}")

    def aggregate(self, aggregate_function: AggregateFunction, window_function: Any = None,
                  accumulator_type: Any = None, output_type: Any = None) -> DataStream:
        """Aggregates each window incrementally with an AggregateFunction (then ``window_function``)."""
        require_function(aggregate_function, AggregateFunction, "aggregate()")
        user_wf, internal = self._window_function(window_function, "aggregate()")
        return self._build(function=aggregate_function, window_state="aggregating", window_function=user_wf,
                           internal=internal, output_type=normalize_output_type(output_type, "aggregate()"),
                           accumulator_type=normalize_output_type(accumulator_type, "aggregate()"),
                           func_desc=f"{describe_function(aggregate_function)}, {describe_function(user_wf)}")

    def apply(self, window_function: Any, output_type: Any = None) -> DataStream:
        """Evaluates each window with all its elements (buffered until the window fires)."""
        plain = self._function_classes[0]
        require_function(window_function, plain, "apply()")
        return self._build(function=None, window_state="list", window_function=window_function,
                           internal=self._iterable[0](window_function),
                           output_type=normalize_output_type(output_type, "apply()"),
                           func_desc=describe_function(window_function))

    def process(self, process_window_function: Any, output_type: Any = None) -> DataStream:
        """Evaluates each window with all its elements and a Context (window, time, state)."""
        process = self._function_classes[1]
        require_function(process_window_function, process, "process() on a windowed stream")
        return self._build(function=None, window_state="list", window_function=process_window_function,
                           internal=self._iterable[1](process_window_function),
                           output_type=normalize_output_type(output_type, "process()"),
                           func_desc=describe_function(process_window_function))


class WindowedStream(_WindowedStreamBase):
    """A KeyedStream cut into windows per key: ``key_by(k).window(assigner)``.

    Finish it with ``reduce``, ``aggregate``, ``apply`` (WindowFunction) or ``process``
    (ProcessWindowFunction); windows fire per key, when their trigger says so.
    """


class AllWindowedStream(_WindowedStreamBase):
    """A non-keyed stream cut into windows: ``ds.window_all(assigner)``.

    Finish it with ``reduce``, ``aggregate``, ``apply`` (AllWindowFunction) or ``process``
    (ProcessAllWindowFunction). The window operator runs in one subtask.
    """

    _kind_name = "AllWindow"
    _function_classes = (AllWindowFunction, ProcessAllWindowFunction)
    _pass_through = PassThroughAllWindowFunction
    _single = (InternalSingleValueAllWindowFunction, InternalSingleValueProcessAllWindowFunction)
    _iterable = (InternalIterableAllWindowFunction, InternalIterableProcessAllWindowFunction)

    def __init__(self, data_stream: DataStream, window_assigner: Any) -> None:
        self._check_assigner(window_assigner)  # before key_by adds anything to the environment
        super().__init__(data_stream.key_by(NullByteKeySelector()), window_assigner)
