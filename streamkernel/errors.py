"""The error hierarchy of streamkernel.

Every error the project raises on purpose derives from :class:`StreamKernelError`, and
each also derives from the built-in exception a Python user would expect (``ValueError``
for a bad value, ``TypeError`` for a bad type), so ``except ValueError`` keeps working.
Messages say what is wrong, where (operator, record, argument) and what to do.
"""

from __future__ import annotations

__all__ = [
    "StreamKernelError",
    "InvalidProgramError",
    "InvalidFunctionError",
    "InvalidArgumentTypeError",
    "NoSuchOperationError",
    "IllegalConfigurationError",
    "NotEnoughSlotsError",
    "UserFunctionError",
    "JobExecutionError",
    "CheckpointCorruptedError",
    "CheckpointFailedError",
    "CheckpointStorageError",
]


class StreamKernelError(Exception):
    """Base class of every error streamkernel raises on purpose."""


class InvalidProgramError(StreamKernelError, ValueError):
    """A dataflow program misuses the API: a bad argument or a call in the wrong place.

    Raised at the call that is wrong, e.g. ``set_parallelism(0)`` or a window on an
    unkeyed stream, naming the operator and the argument.
    """


class InvalidFunctionError(InvalidProgramError, TypeError):
    """A user function has the wrong type: not callable, or not the expected Function class."""


class InvalidArgumentTypeError(InvalidProgramError, TypeError):
    """An argument of an API call has the wrong type, e.g. ``OutputTag("late", 5)`` or
    ``broadcast(5)``: a ``TypeError`` where PyFlink raises one."""


class NoSuchOperationError(InvalidProgramError, AttributeError):
    """A stream does not have the operation, e.g. ``window()`` on a non-keyed DataStream.

    PyFlink's stream class has no such method, so a program sees an ``AttributeError``
    there; streamkernel raises this one (an AttributeError too) with the fix in its message.
    """


class IllegalConfigurationError(StreamKernelError, ValueError):
    """A configuration key or value is unknown or out of range."""


class NotEnoughSlotsError(StreamKernelError):
    """A job needs more task slots than the cluster offers; the message names the shortfall."""


class UserFunctionError(StreamKernelError):
    """A user function raised while processing a record; names the operator, subtask and record."""


class JobExecutionError(StreamKernelError):
    """A job failed; the message names the failing operator/subtask and the cause is chained.

    Raised by ``env.execute()`` (and by a JobClient's ``get_job_execution_result()``) when
    the job FAILED or was CANCELED, as Flink's JobExecutionException. ``__cause__`` is the
    exception the failing subtask raised; ``job_id`` and ``job_status`` say which job and how
    it ended.
    """

    def __init__(self, message: str, job_id: object = None, job_status: object = None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.job_status = job_status


class CheckpointCorruptedError(StreamKernelError, ValueError):
    """A checkpoint or savepoint cannot be restored: its metadata or a state file is missing,
    truncated, altered (checksum mismatch) or unreadable.

    ``path`` is the file (or directory) at fault and ``reason`` says what is wrong with it.
    Recovery skips such a checkpoint and falls back to the previous complete one; restoring
    it by path raises this error: pick an older checkpoint or another savepoint.
    """

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"checkpoint file {path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple:  # picklable across processes despite the two-argument constructor
        return (type(self), (self.path, self.reason))


class CheckpointFailedError(StreamKernelError, RuntimeError):
    """A checkpoint or savepoint did not complete (Flink's ``CheckpointException``): a task
    declined it, it timed out, the job was not running or stopped meanwhile; or a job failed
    because more checkpoints failed in a row than ``execution.checkpointing.tolerable-failed-checkpoints``
    allows. The message says which checkpoint and why.
    """


class CheckpointStorageError(StreamKernelError, OSError):
    """The checkpoint storage's directory cannot be used (Flink's ``IOException`` of its checkpoint
    storage access): a directory of it is a file now. The message names the directory and the
    configuration key it comes from (``execution.checkpointing.dir``). It fails a checkpoint, or the
    restore of a restarting job, which then goes through its restart strategy."""
