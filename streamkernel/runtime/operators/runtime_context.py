"""PyFlink's RuntimeContext, as an operator's user function sees it."""

from __future__ import annotations

from typing import Any

from streamkernel.datastream.functions import RuntimeContext
from streamkernel.errors import InvalidProgramError
from streamkernel.runtime.operators.base import OperatorContext

__all__ = ["StreamingRuntimeContext"]


class StreamingRuntimeContext(RuntimeContext):
    """Task information, keyed state and metrics for a user function (``open(runtime_context)``)."""

    def __init__(self, context: OperatorContext) -> None:
        self._context = context

    def get_task_name(self) -> str:
        """The task (job vertex) name, as PyFlink names it: consecutive Python operators it merges
        are one (``"Map, Filter"``) and its own operators (``_stream_key_by_map_operator``) appear."""
        info = self._context.task_info
        return info.pyflink_task_name or info.task_name

    def get_number_of_parallel_subtasks(self) -> int:
        """The operator's parallelism."""
        return self._context.task_info.parallelism

    def get_max_number_of_parallel_subtasks(self) -> int:
        """The operator's max parallelism (number of key groups)."""
        return self._context.task_info.max_parallelism

    def get_index_of_this_subtask(self) -> int:
        """This subtask's index, from 0."""
        return self._context.task_info.subtask_index

    def get_attempt_number(self) -> int:
        """How often this subtask was restarted (0 on the first attempt)."""
        return self._context.task_info.attempt_number

    def get_task_name_with_subtasks(self) -> str:
        """``"Map, Filter -> Sink: Print to Std. Out (2/4)#0"``, with the task name PyFlink gives."""
        return self._context.task_info.pyflink_task_name_with_subtasks

    def get_job_parameter(self, key: str, default_value: str) -> str:
        """A global job parameter (``env.get_config().set_global_job_parameters``)."""
        return self._context.job_parameters.get(key, default_value)

    def get_metrics_group(self) -> Any:
        """The operator's metric group (``counter``, ``gauge`` ...)."""
        return self._context.metrics.user

    def _backend(self, call: str) -> Any:
        backend = self._context.keyed_backend
        if backend is None:
            raise InvalidProgramError(
                f"{call}: keyed state is only available on a keyed stream (after key_by) — operator "
                f"{self._context.node.name!r} is not keyed")
        return backend

    def get_state(self, state_descriptor: Any) -> Any:
        """The ValueState of the current key."""
        return self._backend("get_state()").get_state(state_descriptor)

    def get_list_state(self, state_descriptor: Any) -> Any:
        """The ListState of the current key."""
        return self._backend("get_list_state()").get_state(state_descriptor)

    def get_map_state(self, state_descriptor: Any) -> Any:
        """The MapState of the current key."""
        return self._backend("get_map_state()").get_state(state_descriptor)

    def get_reducing_state(self, state_descriptor: Any) -> Any:
        """The ReducingState of the current key."""
        return self._backend("get_reducing_state()").get_state(state_descriptor)

    def get_aggregating_state(self, state_descriptor: Any) -> Any:
        """The AggregatingState of the current key."""
        return self._backend("get_aggregating_state()").get_state(state_descriptor)
