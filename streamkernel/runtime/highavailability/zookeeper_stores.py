"""The HA stores in ZooKeeper (Flink's ``ZooKeeperExecutionPlanStore`` (via ``ZooKeeperStateHandleStore``),
``ZooKeeperCheckpointIDCounter``, ``ZooKeeperCompletedCheckpointStore``).

Every write is a ZooKeeper transaction that also checks this process's leader latch node
(:func:`~.zookeeper_utils.commit_as_leader`): a process that lost the latch (its session expired,
or the latch node is gone) writes nothing and gets
:class:`~streamkernel.runtime.highavailability.leader.LeadershipLostError`. Reads need no leadership.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from typing import Any, Callable, Optional

from streamkernel.errors import CheckpointCorruptedError, StreamKernelError
from streamkernel.runtime.checkpoint import filesystem as fs
from streamkernel.runtime.highavailability.stores import (
    GLOBALLY_TERMINAL,
    INITIAL_CHECKPOINT_ID,
    CheckpointIDCounter,
    CheckpointRecoveryFactory,
    CompletedCheckpointPointer,
    CompletedCheckpointStore,
    ExecutionPlanListener,
    ExecutionPlanRecoveryError,
    ExecutionPlanStore,
)
from streamkernel.runtime.highavailability.zookeeper_utils import ZooKeeperPaths, checkpoint_node_name, commit_as_leader

__all__ = ["ZooKeeperExecutionPlanStore", "ZooKeeperCheckpointIDCounter", "ZooKeeperCompletedCheckpointStore",
           "ZooKeeperCheckpointRecoveryFactory", "EXECUTION_PLAN_FILE_PREFIX"]

LOG = logging.getLogger(__name__)

#: The job graph files in ``<storageDir>/<cluster-id>/`` (Flink 2.x's prefix).
EXECUTION_PLAN_FILE_PREFIX = "submittedExecutionPlan-"

LatchNode = Callable[[], str]


class ZooKeeperExecutionPlanStore(ExecutionPlanStore):
    """Job graphs pickled (cloudpickle) to files in ``storage_dir``, written there first; the node
    ``execution-plans/<job-id>`` holds the file's path, size and SHA-256."""

    def __init__(self, client: Any, paths: ZooKeeperPaths, storage_dir: str, latch_node: LatchNode) -> None:
        self._client = client
        self._path = paths.execution_plans
        self._storage_dir = storage_dir
        self._latch_node = latch_node
        self._known: Optional[set[str]] = None
        self._listening = False

    def _node(self, job_id: str) -> str:
        return f"{self._path}/{job_id}"

    def _pointer(self, job_id: str) -> Optional[tuple[dict, Any]]:
        from kazoo.exceptions import NoNodeError

        try:
            data, stat = self._client.get(self._node(job_id))
        except NoNodeError:
            return None
        try:
            pointer = json.loads(data.decode())
            return {"path": str(pointer["path"]), "size": int(pointer["size"]),
                    "sha256": str(pointer["sha256"])}, stat
        except (ValueError, KeyError, TypeError) as error:
            raise ExecutionPlanRecoveryError(job_id, self._node(job_id),
                                             f"the ZooKeeper node is not a pointer ({error})") from None

    def put_execution_plan(self, job_id: str, plan: Any) -> None:
        """Write the plan's file, then (as leader) point ``execution-plans/<job-id>`` at it; the
        file of a plan it replaces is deleted afterwards."""
        import cloudpickle

        data = cloudpickle.dumps(plan)
        fs.makedirs(self._storage_dir)
        path = fs.join(self._storage_dir, f"{EXECUTION_PLAN_FILE_PREFIX}{job_id}-{uuid.uuid4().hex}")
        size, sha256 = fs.write_bytes(path, data)
        pointer = json.dumps({"path": path, "size": size, "sha256": sha256}).encode()
        self._client.ensure_path(self._path)
        try:
            previous = self._pointer(job_id)
        except ExecutionPlanRecoveryError:
            previous = None
        node = self._node(job_id)
        try:
            if previous is None:
                commit_as_leader(self._client, self._latch_node, lambda t: t.create(node, pointer),
                                 f"persist the execution plan of job {job_id}")
            else:
                commit_as_leader(self._client, self._latch_node,
                                 lambda t: t.set_data(node, pointer, version=previous[1].version),
                                 f"persist the execution plan of job {job_id}")
        except BaseException:
            _remove_quietly(path)
            raise
        if previous is not None:
            _remove_quietly(previous[0]["path"])

    def recover_execution_plan(self, job_id: str) -> Optional[Any]:
        """The plan of ``job_id`` (None if none is persisted); its file missing, changed or not
        unpicklable raises :class:`ExecutionPlanRecoveryError` naming the job and the file."""
        import cloudpickle

        found = self._pointer(job_id)
        if found is None:
            return None
        pointer = found[0]
        try:
            data = fs.read_verified(pointer["path"], pointer["size"], pointer["sha256"])
        except CheckpointCorruptedError as error:
            raise ExecutionPlanRecoveryError(job_id, pointer["path"], str(error.reason)) from None
        except OSError as error:
            raise ExecutionPlanRecoveryError(job_id, pointer["path"], f"{type(error).__name__}: {error}") from None
        try:
            return cloudpickle.loads(data)
        except Exception as error:  # noqa: BLE001 - any unpickling failure means the file is unusable
            raise ExecutionPlanRecoveryError(
                job_id, pointer["path"], f"cannot be unpickled ({type(error).__name__}: {error}); is the code "
                                         "that wrote it importable here?") from None

    def get_job_ids(self) -> list[str]:
        """The jobs with a persisted plan."""
        from kazoo.exceptions import NoNodeError

        try:
            return sorted(self._client.get_children(self._path))
        except NoNodeError:
            return []

    def global_cleanup(self, job_id: str) -> None:
        """Delete (as leader) the pointer of ``job_id``, then its file."""
        from kazoo.exceptions import NoNodeError

        try:
            found = self._pointer(job_id)
        except ExecutionPlanRecoveryError:
            found = None
        try:
            commit_as_leader(self._client, self._latch_node, lambda t: t.delete(self._node(job_id)),
                             f"remove the execution plan of job {job_id}")
        except NoNodeError:
            pass
        if found is not None:
            _remove_quietly(found[0]["path"])

    def start(self, listener: Optional[ExecutionPlanListener] = None) -> None:
        """Watch ``execution-plans`` (kazoo's ChildrenWatch): ``listener`` hears plans that others add or remove."""
        if listener is None or self._listening:
            return
        from kazoo.recipe.watchers import ChildrenWatch

        self._listening = True
        self._client.ensure_path(self._path)

        def changed(children: list[str]) -> Optional[bool]:
            if not self._listening:
                return False
            now = set(children)
            before, self._known = self._known, now
            if before is None:
                return None
            for job_id in sorted(now - before):
                listener.on_added_execution_plan(job_id)
            for job_id in sorted(before - now):
                listener.on_removed_execution_plan(job_id)
            return None

        ChildrenWatch(self._client, self._path, changed)

    def stop(self) -> None:
        self._listening = False


def _remove_quietly(path: str) -> None:
    try:
        fs.remove(path)
    except OSError:
        LOG.debug("Could not remove %s", path, exc_info=True)


class ZooKeeperCheckpointIDCounter(CheckpointIDCounter):
    """``jobs/<job-id>/checkpoint_id_counter``: the next id as decimal text, advanced by compare-and-set
    on the node's version in a transaction with the leadership check, so no id is handed out twice."""

    def __init__(self, client: Any, paths: ZooKeeperPaths, job_id: str, latch_node: LatchNode) -> None:
        self._client = client
        self._path = paths.checkpoint_id_counter(job_id)
        self._job_id = job_id
        self._latch_node = latch_node

    def start(self) -> None:
        from kazoo.exceptions import NodeExistsError

        self._client.ensure_path(self._path.rsplit("/", 1)[0])
        if self._client.exists(self._path) is None:
            try:
                commit_as_leader(self._client, self._latch_node,
                                 lambda t: t.create(self._path, str(INITIAL_CHECKPOINT_ID).encode()),
                                 f"create the checkpoint id counter of job {self._job_id}")
            except NodeExistsError:
                pass

    def _read(self) -> tuple[int, int]:
        data, stat = self._client.get(self._path)
        try:
            return int(data.decode()), stat.version
        except ValueError:
            raise StreamKernelError(f"The checkpoint id counter {self._path} holds {data!r}, not a number") from None

    def _compare_and_set(self, new_value: Callable[[int], int], what: str) -> int:
        from kazoo.exceptions import BadVersionError

        while True:
            count, version = self._read()
            try:
                commit_as_leader(self._client, self._latch_node,
                                 functools.partial(self._set, new_value(count), version), what)
            except BadVersionError:
                continue  # someone else moved it in between: read again
            return count

    def _set(self, value: int, version: int, transaction: Any) -> None:
        transaction.set_data(self._path, str(value).encode(), version=version)

    def get_and_increment(self) -> int:
        return self._compare_and_set(lambda count: count + 1, f"hand out a checkpoint id of job {self._job_id}")

    def get(self) -> int:
        return self._read()[0]

    def set_count(self, count: int) -> None:
        if count < INITIAL_CHECKPOINT_ID:
            raise ValueError(f"set_count: the checkpoint id counter cannot go below {INITIAL_CHECKPOINT_ID}, "
                             f"got {count}")
        self._compare_and_set(lambda _: count, f"set the checkpoint id counter of job {self._job_id}")

    def shutdown(self, job_status: str) -> None:
        from kazoo.exceptions import NoNodeError

        if job_status in GLOBALLY_TERMINAL:
            try:
                commit_as_leader(self._client, self._latch_node, lambda t: t.delete(self._path),
                                 f"remove the checkpoint id counter of job {self._job_id}")
            except NoNodeError:
                pass


class ZooKeeperCompletedCheckpointStore(CompletedCheckpointStore):
    """``jobs/<job-id>/checkpoints/<id>``: JSON pointers to completed checkpoints' directories (their
    ``_metadata`` stays in checkpoint storage). Adding one and dropping the oldest beyond
    ``max_retained`` is one transaction."""

    def __init__(self, client: Any, paths: ZooKeeperPaths, job_id: str, max_retained: int,
                 latch_node: LatchNode) -> None:
        super().__init__(max_retained)
        self._client = client
        self._path = paths.checkpoints(job_id)
        self._job_id = job_id
        self._latch_node = latch_node
        client.ensure_path(self._path)

    def _names(self) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return sorted(self._client.get_children(self._path))
        except NoNodeError:
            return []

    def _read(self, name: str) -> CompletedCheckpointPointer:
        data, _ = self._client.get(f"{self._path}/{name}")
        try:
            value = json.loads(data.decode())
            return CompletedCheckpointPointer(int(value["checkpoint_id"]), str(value["external_pointer"]),
                                              int(value.get("timestamp", 0)))
        except (ValueError, KeyError, TypeError) as error:
            raise StreamKernelError(f"The completed checkpoint pointer {self._path}/{name} of job {self._job_id} "
                                    f"is unreadable ({type(error).__name__}: {error})") from None

    def add_checkpoint_and_subsume_oldest_one(self, checkpoint: Any) -> list[CompletedCheckpointPointer]:
        pointer = self._pointer(checkpoint)
        name = checkpoint_node_name(pointer.checkpoint_id)
        data = json.dumps({"checkpoint_id": pointer.checkpoint_id, "external_pointer": pointer.external_pointer,
                           "timestamp": pointer.timestamp}).encode()
        names = sorted(set(self._names()) | {name})
        dropped_names = names[:-self.max_retained]
        dropped = [self._read(n) for n in dropped_names if n != name]

        def build(transaction: Any) -> None:
            if name not in dropped_names:
                transaction.create(f"{self._path}/{name}", data)
            for old in dropped_names:
                if old != name:
                    transaction.delete(f"{self._path}/{old}")

        commit_as_leader(self._client, self._latch_node, build,
                         f"add checkpoint {pointer.checkpoint_id} of job {self._job_id}")
        return dropped if name not in dropped_names else dropped + [pointer]

    def get_all_checkpoints(self) -> list[CompletedCheckpointPointer]:
        from kazoo.exceptions import NoNodeError

        result = []
        for name in self._names():
            try:
                result.append(self._read(name))
            except NoNodeError:  # subsumed while we listed
                continue
        return result

    def shutdown(self, job_status: str) -> None:
        if job_status not in GLOBALLY_TERMINAL:
            return
        names = self._names()

        def build(transaction: Any) -> None:
            for name in names:
                transaction.delete(f"{self._path}/{name}")
            transaction.delete(self._path)

        commit_as_leader(self._client, self._latch_node, build, f"remove the checkpoints of job {self._job_id}")


class ZooKeeperCheckpointRecoveryFactory(CheckpointRecoveryFactory):
    """Makes each job's counter and store on this client."""

    def __init__(self, client: Any, paths: ZooKeeperPaths, latch_node: LatchNode) -> None:
        self._client = client
        self._paths = paths
        self._latch_node = latch_node

    def create_checkpoint_id_counter(self, job_id: str) -> CheckpointIDCounter:
        counter = ZooKeeperCheckpointIDCounter(self._client, self._paths, job_id, self._latch_node)
        counter.start()
        return counter

    def create_completed_checkpoint_store(self, job_id: str, max_retained: int) -> CompletedCheckpointStore:
        return ZooKeeperCompletedCheckpointStore(self._client, self._paths, job_id, max_retained, self._latch_node)
