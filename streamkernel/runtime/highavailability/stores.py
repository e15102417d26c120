"""What survives a JobManager: the contracts of Flink's HA stores, and their records.

- :class:`ExecutionPlanStore` (Flink 2.x's name of the ``JobGraphStore``): the submitted job
  graphs, recovered by the next leader.
- :class:`CheckpointIDCounter`: checkpoint ids that keep increasing across leaders.
- :class:`CompletedCheckpointStore`: pointers to the latest completed checkpoints of a job.
- :class:`CheckpointRecoveryFactory`: makes the two above per job.
- :class:`JobResultStore`: the jobs that reached a globally terminal state, so that they are not
  recovered again (``dirty`` until their data is cleaned up, then ``clean``).

Writes of the ZooKeeper implementations succeed only while the writing process holds the
leadership (see ``docs/high-availability.md``); otherwise they raise
:class:`~streamkernel.runtime.highavailability.leader.LeadershipLostError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

from streamkernel.errors import StreamKernelError

__all__ = ["INITIAL_CHECKPOINT_ID", "ExecutionPlanRecoveryError", "ExecutionPlanListener", "ExecutionPlanStore",
           "CheckpointIDCounter", "CompletedCheckpointPointer", "CompletedCheckpointStore",
           "CheckpointRecoveryFactory", "JobResult", "JobResultEntry", "JobResultStore", "GLOBALLY_TERMINAL",
           "APPLICATION_STATUS"]

#: The first checkpoint id a job's counter hands out (Flink's ``CheckpointIDCounter.INITIAL_CHECKPOINT_ID``).
INITIAL_CHECKPOINT_ID = 1
#: Job states after which a job is never recovered (Flink's ``JobStatus.isGloballyTerminalState``).
GLOBALLY_TERMINAL = frozenset({"FINISHED", "CANCELED", "FAILED"})


class ExecutionPlanRecoveryError(StreamKernelError):
    """A persisted job graph could not be read back; names the job and the file (other jobs are unaffected)."""

    def __init__(self, job_id: str, path: str, reason: str) -> None:
        super().__init__(f"Could not recover the execution plan of job {job_id} from {path}: {reason}")
        self.job_id = job_id
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple:  # picklable across processes despite the three-argument constructor
        return (type(self), (self.job_id, self.path, self.reason))


class ExecutionPlanListener(Protocol):
    """Hears about plans other processes add or remove (Flink's ``ExecutionPlanStore.ExecutionPlanListener``)."""

    def on_added_execution_plan(self, job_id: str) -> None:
        """A plan for ``job_id`` appeared."""

    def on_removed_execution_plan(self, job_id: str) -> None:
        """The plan of ``job_id`` was removed."""


class ExecutionPlanStore(ABC):
    """The submitted job graphs (Flink's ``ExecutionPlanStore``)."""

    def start(self, listener: Optional[ExecutionPlanListener] = None) -> None:
        """Start; ``listener`` (if any) hears about plans added or removed by others."""

    def stop(self) -> None:
        """Stop listening."""

    @abstractmethod
    def put_execution_plan(self, job_id: str, plan: Any) -> None:
        """Persist ``plan`` (anything cloudpickle can write: the job graph with the user's code)."""

    @abstractmethod
    def recover_execution_plan(self, job_id: str) -> Optional[Any]:
        """The persisted plan of ``job_id``, None if there is none; :class:`ExecutionPlanRecoveryError`
        when it cannot be read."""

    @abstractmethod
    def get_job_ids(self) -> list[str]:
        """The ids of the persisted plans."""

    @abstractmethod
    def global_cleanup(self, job_id: str) -> None:
        """Remove ``job_id``'s plan for good (the job is globally terminal)."""

    def local_cleanup(self, job_id: str) -> None:
        """Forget ``job_id`` locally (another leader may still recover it)."""


class CheckpointIDCounter(ABC):
    """Checkpoint ids of one job (Flink's ``CheckpointIDCounter``)."""

    def start(self) -> None:
        """Create the counter at :data:`INITIAL_CHECKPOINT_ID` if it does not exist."""

    @abstractmethod
    def get_and_increment(self) -> int:
        """The next checkpoint id (never handed out before, whoever leads)."""

    @abstractmethod
    def get(self) -> int:
        """The id :meth:`get_and_increment` hands out next."""

    @abstractmethod
    def set_count(self, count: int) -> None:
        """Continue from ``count`` (after a restore from a savepoint)."""

    @abstractmethod
    def shutdown(self, job_status: str) -> None:
        """Stop; a globally terminal ``job_status`` also removes the counter."""


@dataclass(frozen=True)
class CompletedCheckpointPointer:
    """A completed checkpoint as the store keeps it: its id, where its directory is, and when it was taken."""

    checkpoint_id: int
    external_pointer: str
    timestamp: int = 0

    def load(self) -> Any:
        """The :class:`~streamkernel.runtime.checkpoint.metadata.CompletedCheckpoint` it points to
        (reads its ``_metadata``)."""
        from streamkernel.runtime.checkpoint import filesystem as fs
        from streamkernel.runtime.checkpoint.metadata import METADATA_FILE, CheckpointMetadata, CompletedCheckpoint

        metadata_path = fs.join(self.external_pointer, METADATA_FILE)
        text = fs.read_bytes(metadata_path).decode()
        return CompletedCheckpoint(self.external_pointer, CheckpointMetadata.from_json(text, metadata_path))


class CompletedCheckpointStore(ABC):
    """The latest completed checkpoints of one job (Flink's ``CompletedCheckpointStore``)."""

    def __init__(self, max_retained: int) -> None:
        if max_retained < 1:
            raise ValueError(f"CompletedCheckpointStore: max_retained must be >= 1, got {max_retained}")
        self.max_retained = max_retained

    @abstractmethod
    def add_checkpoint_and_subsume_oldest_one(self, checkpoint: Any) -> list[CompletedCheckpointPointer]:
        """Add ``checkpoint`` (a :class:`CompletedCheckpointPointer`, or anything with ``checkpoint_id``,
        ``path`` and ``timestamp``: a ``CompletedCheckpoint``); returns the pointers dropped to keep at
        most ``max_retained`` (their files are the caller's to discard)."""

    @abstractmethod
    def get_all_checkpoints(self) -> list[CompletedCheckpointPointer]:
        """The retained checkpoints, oldest first."""

    def get_latest_checkpoint(self) -> Optional[CompletedCheckpointPointer]:
        """The newest retained checkpoint, or None."""
        checkpoints = self.get_all_checkpoints()
        return checkpoints[-1] if checkpoints else None

    def get_number_of_retained_checkpoints(self) -> int:
        """How many checkpoints are retained."""
        return len(self.get_all_checkpoints())

    @abstractmethod
    def shutdown(self, job_status: str) -> None:
        """Stop; a globally terminal ``job_status`` also removes the pointers."""

    @staticmethod
    def _pointer(checkpoint: Any) -> CompletedCheckpointPointer:
        if isinstance(checkpoint, CompletedCheckpointPointer):
            return checkpoint
        return CompletedCheckpointPointer(int(checkpoint.checkpoint_id), str(checkpoint.path),
                                          int(getattr(checkpoint, "timestamp", 0)))


class CheckpointRecoveryFactory(ABC):
    """Makes a job's checkpoint id counter and completed checkpoint store (Flink's ``CheckpointRecoveryFactory``)."""

    @abstractmethod
    def create_checkpoint_id_counter(self, job_id: str) -> CheckpointIDCounter:
        """The (started) checkpoint id counter of ``job_id``."""

    @abstractmethod
    def create_completed_checkpoint_store(self, job_id: str, max_retained: int) -> CompletedCheckpointStore:
        """The completed checkpoint store of ``job_id``, holding what earlier leaders added."""


#: Flink's ``ApplicationStatus`` of a globally terminal job state.
APPLICATION_STATUS = {"FINISHED": "SUCCEEDED", "FAILED": "FAILED", "CANCELED": "CANCELED"}


@dataclass(frozen=True)
class JobResult:
    """How a job ended (Flink's ``JobResult``): its id, its ``ApplicationStatus`` (SUCCEEDED, FAILED,
    CANCELED or UNKNOWN, as Flink's job result store writes it), its runtime and accumulators."""

    job_id: str
    application_status: str
    net_runtime_ms: int = 0
    accumulator_results: dict = field(default_factory=dict)
    failure: Optional[str] = None

    def __post_init__(self) -> None:
        if self.application_status not in ("SUCCEEDED", "FAILED", "CANCELED", "UNKNOWN"):
            raise ValueError(f"JobResult of job {self.job_id}: application_status must be SUCCEEDED, FAILED, "
                             f"CANCELED or UNKNOWN, got {self.application_status!r}")

    @classmethod
    def from_job_status(cls, job_id: str, job_status: str, net_runtime_ms: int = 0,
                        accumulator_results: Optional[dict] = None, failure: Optional[str] = None) -> "JobResult":
        """The result of a job that reached the globally terminal ``job_status`` (FINISHED -> SUCCEEDED)."""
        if job_status not in APPLICATION_STATUS:
            raise ValueError(f"JobResult of job {job_id}: {job_status!r} is not a globally terminal job status "
                             f"({', '.join(sorted(APPLICATION_STATUS))})")
        return cls(job_id, APPLICATION_STATUS[job_status], net_runtime_ms, dict(accumulator_results or {}), failure)


@dataclass(frozen=True)
class JobResultEntry:
    """A :class:`JobResult` in the :class:`JobResultStore` (Flink's ``JobResultEntry``)."""

    job_result: JobResult

    @property
    def job_id(self) -> str:
        """The job's id."""
        return self.job_result.job_id


class JobResultStore(ABC):
    """The globally terminated jobs (Flink's ``JobResultStore``): never recovered again."""

    @abstractmethod
    def create_dirty_result(self, entry: JobResultEntry) -> None:
        """Record a job as terminated with its data not yet cleaned up; a second entry for it is an error."""

    @abstractmethod
    def mark_result_as_clean(self, job_id: str) -> None:
        """The job's data is cleaned up; ``KeyError`` if it has no dirty entry."""

    @abstractmethod
    def has_dirty_job_result_entry(self, job_id: str) -> bool:
        """Whether a dirty entry exists for ``job_id``."""

    @abstractmethod
    def has_clean_job_result_entry(self, job_id: str) -> bool:
        """Whether a clean entry exists for ``job_id``."""

    def has_job_result_entry(self, job_id: str) -> bool:
        """Whether ``job_id`` terminated (dirty or clean)."""
        return self.has_dirty_job_result_entry(job_id) or self.has_clean_job_result_entry(job_id)

    @abstractmethod
    def get_dirty_results(self) -> list[JobResult]:
        """The results whose cleanup is pending (a new leader finishes their cleanup)."""
