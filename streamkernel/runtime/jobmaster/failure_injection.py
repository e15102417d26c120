"""Failure injection, the pure part: which running subtasks "fail operator X" means.

``MiniCluster.failures.fail_operator(job, "Map")`` makes the running subtasks of an operator raise
an :class:`~streamkernel.testing.InjectedFailure` in their own threads, so the job fails
and recovers exactly as after a real failure (the issue's ``%flink fail OPERATOR``). An
operator is named by its uid, its name (``"Map"``, ``"Source: Numbers"``) or the name of
its chain (``"Source: Numbers -> Map"``); an operator chained with others fails the whole
task, as a real exception would. This module resolves the name against the job's graph
and its published status (no I/O); the MiniCluster delivers the failure.
"""

from __future__ import annotations

from typing import Optional

from streamkernel.errors import StreamKernelError
from streamkernel.graph.job_graph import JobGraph
from streamkernel.runtime.core.deployment import ExecutionState
from streamkernel.runtime.jobmaster.job_status import JobDetails, SubtaskDetails

__all__ = ["FailureInjectionError", "NoSuchSubtaskError", "subtasks_to_fail", "injected_failure_message", "operator_nodes",
           "unknown_operator"]

_LIVE = (ExecutionState.DEPLOYING, ExecutionState.INITIALIZING, ExecutionState.RUNNING)


class FailureInjectionError(StreamKernelError, ValueError):
    """A failure could not be injected: unknown operator or subtask, or nothing is running."""


class NoSuchSubtaskError(FailureInjectionError):
    """The chosen subtask index is outside the operator's parallelism.

    ``operator``, ``job``, ``parallelism`` and ``subtask`` (0-based, as given) let a caller
    that counts subtasks from 1 (``%flink fail --subtask``) say it in its own terms.
    """

    def __init__(self, operator: str, job: str, parallelism: int, subtask: int) -> None:
        super().__init__(f"operator {operator!r} of {job} runs {parallelism} subtask(s), indexes 0..{parallelism - 1} "
                         f"(from 0; its subtask names count from 1: 1/{parallelism} .. {parallelism}/{parallelism}); "
                         f"there is no subtask index {subtask}")
        self.operator, self.job, self.parallelism, self.subtask = operator, job, parallelism, subtask


def operator_nodes(job_graph: JobGraph, operator: str) -> list[tuple[int, int]]:
    """(job vertex id, stream node id) of the operators ``operator`` names: by uid; else by
    name (operators of one task only: a name shared by several tasks is ambiguous and raises
    :class:`FailureInjectionError` asking for a uid); else by a chain's name (its last
    operator). Empty when nothing matches. Used by failure injection and ``%flink peek``."""
    wanted = operator.strip()
    nodes = [(v.id, n) for v in job_graph.vertices for n in job_graph.operators(v.id)]
    by_uid = [(vertex_id, n.id) for vertex_id, n in nodes if n.uid == wanted]
    if by_uid:
        return by_uid
    by_name = [(vertex_id, n) for vertex_id, n in nodes if n.name == wanted]
    if len({vertex_id for vertex_id, _ in by_name}) > 1:
        candidates = [f"{n.name!r} (uid {n.uid!r})" if n.uid else repr(n.name) for _, n in by_name]
        raise FailureInjectionError(
            f"operator name {operator!r} is ambiguous in job {job_graph.job_name!r}: "
            f"{len({v for v, _ in by_name})} tasks run an operator of that name ({', '.join(candidates)}); "
            f"give the operator a uid (.uid('...')) and name it")
    if by_name:
        return [(vertex_id, n.id) for vertex_id, n in by_name]
    return [(v.id, job_graph.operators(v.id)[-1].id) for v in job_graph.vertices if v.name == wanted]


def unknown_operator(job_graph: JobGraph, job: str, operator: str) -> FailureInjectionError:
    """The error for an operator name that matches nothing: it lists the job's operators."""
    names = sorted({n.uid or n.name for v in job_graph.vertices for n in job_graph.operators(v.id)})
    return FailureInjectionError(f"{job} has no operator named {operator!r} (by uid or name); "
                                 f"its operators are: {', '.join(repr(n) for n in names)}")


def subtasks_to_fail(job_graph: JobGraph, details: JobDetails, operator: str,
                     subtask: Optional[int] = None) -> list[SubtaskDetails]:
    """The live subtasks (deploying, initializing or running) of the task running ``operator``.

    ``subtask`` (0-based) picks one of them; None means every live one. Raises
    :class:`FailureInjectionError` naming what exists when nothing matches.
    """
    job = f"job {details.job_name!r} ({details.job_id})"
    if details.status.is_globally_terminal_state():
        raise FailureInjectionError(f"{job} is {details.status.name}: there is nothing left to fail")
    vertex_ids = sorted({vertex_id for vertex_id, _ in operator_nodes(job_graph, operator)})
    if not vertex_ids:
        raise unknown_operator(job_graph, job, operator)
    vertex = next(v for v in details.vertices if v.vertex_id == vertex_ids[0])
    if subtask is not None and not 0 <= subtask < vertex.parallelism:
        raise NoSuchSubtaskError(operator, job, vertex.parallelism, subtask)
    chosen = [s for s in vertex.subtasks if subtask is None or s.subtask_index == subtask]
    live = [s for s in chosen if s.state in _LIVE and s.taskmanager_id is not None]
    if not live:
        states = ", ".join(f"{s.name}: {s.state.value}" for s in chosen)
        raise FailureInjectionError(f"no subtask of operator {operator!r} of {job} is running ({states}; "
                                    f"the job is {details.status.name}); try again once it runs")
    return live


def injected_failure_message(operator: str, target: SubtaskDetails) -> str:
    """The message of the injected exception: says it was injected, into what, by whom."""
    return (f"failure injected into operator {operator!r}, subtask {target.name} attempt {target.attempt_number} "
            f"on {target.taskmanager_id}, by MiniCluster.failures.fail_operator (failure injection, not a bug)")
