"""JobStatus and JobID: the states a job goes through, and the job's identity."""

from __future__ import annotations

import os
from enum import Enum
from typing import Callable, Iterable, Optional, TypeVar, Union

from streamkernel.errors import InvalidProgramError

__all__ = ["JobStatus", "JobID", "select_jobs"]

_Job = TypeVar("_Job")


class JobStatus(Enum):
    """Possible states of a job once it has been accepted by the JobManager (Flink's JobStatus).

    * ``INITIALIZING``: the job was submitted and is being set up.
    * ``CREATED``: the job is created; no task has started yet.
    * ``RUNNING``: some tasks are scheduled or running, some may be pending or finished.
    * ``FAILING``: the job has failed and waits for its tasks to be cleaned up.
    * ``FAILED``: the job has failed with a non-recoverable failure.
    * ``CANCELLING``: the job is being cancelled.
    * ``CANCELED``: the job has been cancelled.
    * ``FINISHED``: all tasks have finished successfully.
    * ``RESTARTING``: the job is being reset and restarted (after a failure).
    * ``SUSPENDED``: the job was stopped but not removed (it may be resumed elsewhere).
    * ``RECONCILING``: the job waits for its tasks to report, to recover state.
    """

    INITIALIZING = 0
    CREATED = 1
    RUNNING = 2
    FAILING = 3
    FAILED = 4
    CANCELLING = 5
    CANCELED = 6
    FINISHED = 7
    RESTARTING = 8
    SUSPENDED = 9
    RECONCILING = 10

    def is_globally_terminal_state(self) -> bool:
        """True for FINISHED, CANCELED and FAILED: the job is over for the whole cluster."""
        return self in _GLOBALLY_TERMINAL

    def is_terminal_state(self) -> bool:
        """True when this JobManager is done with the job: the globally terminal states and
        SUSPENDED (which is terminal locally only)."""
        return self in _GLOBALLY_TERMINAL or self is JobStatus.SUSPENDED


_GLOBALLY_TERMINAL = frozenset({JobStatus.FINISHED, JobStatus.CANCELED, JobStatus.FAILED})


class JobID:
    """The (statistically) unique identifier of a job: 16 random bytes, shown as 32 hex digits.

        >>> job_id = JobID()
        >>> JobID.from_hex_string(str(job_id)) == job_id
        True
    """

    __slots__ = ("_bytes",)

    def __init__(self, value: Optional[Union[bytes, str]] = None) -> None:
        if value is None:
            value = os.urandom(16)
        elif isinstance(value, str):
            value = _from_hex(value)
        if not isinstance(value, (bytes, bytearray)) or len(value) != 16:
            raise InvalidProgramError(f"A JobID is 16 bytes or 32 hex digits, got {value!r}")
        self._bytes = bytes(value)

    @staticmethod
    def generate() -> "JobID":
        """A new random JobID."""
        return JobID()

    @staticmethod
    def from_hex_string(hex_string: str) -> "JobID":
        """The JobID written as 32 hex digits."""
        return JobID(_from_hex(hex_string))

    def to_hex_string(self) -> str:
        """This id as 32 lowercase hex digits."""
        return self._bytes.hex()

    def to_bytes(self) -> bytes:
        """This id's 16 bytes."""
        return self._bytes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobID) and self._bytes == other._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __reduce__(self) -> tuple:
        return JobID, (self._bytes,)

    def __str__(self) -> str:
        return self._bytes.hex()

    def __repr__(self) -> str:
        return f"JobID('{self._bytes.hex()}')"


def _from_hex(text: str) -> bytes:
    try:
        value = bytes.fromhex(text)
    except ValueError:
        raise InvalidProgramError(f"A JobID is 32 hex digits, got {text!r}") from None
    if len(value) != 16:
        raise InvalidProgramError(f"A JobID is 32 hex digits, got {text!r}")
    return value


def select_jobs(wanted: str, jobs: Iterable[_Job], id_and_name: Callable[[_Job], tuple[str, str]]) -> list[_Job]:
    """The jobs that ``wanted`` names, the one rule for every place a user names a job.

    A job is named by its full id or its name; when no job is, by the first characters of
    its id (case-insensitive, as ``%flink cancel 3f2a``). ``id_and_name`` gives a job's id
    (hex) and name. Raises InvalidProgramError for an empty or blank ``wanted``, which as a
    prefix would match every job.

        >>> select_jobs("3f", [("3f00", "a"), ("ab00", "b")], lambda j: j)
        [('3f00', 'a')]
    """
    if not isinstance(wanted, str) or not wanted.strip():
        raise InvalidProgramError(f"a job is named by its id, the first characters of its id, or its name; "
                                  f"got {wanted!r}, which would match every job")
    candidates = [(job, *id_and_name(job)) for job in jobs]
    exact = [job for job, job_id, name in candidates if wanted in (job_id, name)]
    if exact:
        return exact
    prefix = wanted.strip().lower()
    return [job for job, job_id, _ in candidates if job_id.lower().startswith(prefix)]
