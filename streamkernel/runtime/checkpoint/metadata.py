"""A completed checkpoint's ``_metadata`` file, and the :class:`CompletedCheckpoint` it describes.

The metadata is what makes a directory of state files a checkpoint (Flink's
``CheckpointMetadata``): which job, which checkpoint, when, whether a savepoint; the
parallelism and max parallelism of every operator (by operator key: its uid, or
``node-<generated id>``) and job vertex, which restoring at another parallelism needs; and every
state file with its size and SHA-256, so a torn or altered file is refused. It is JSON,
readable by people::

    {"format": "streamkernel-checkpoint", "version": 1,
     "job_id": "...", "job_name": "...", "checkpoint_id": 7, "timestamp": 1700000000000,
     "is_savepoint": false,
     "operators": {"counts": {"name": "Keyed Reduce", "vertex_id": 3, "parallelism": 2,
                              "max_parallelism": 128, "uid": "counts"}, ...},
     "vertices": {"3": {"name": "Keyed Reduce -> Sink: ...", "parallelism": 2,
                        "max_parallelism": 128, "operators": ["counts", ...]}, ...},
     "files": [{"vertex_id": 3, "subtask_index": 0, "file": "3-0.state",
                "size": 1234, "sha256": "..."}, ...]}

File names are relative to the checkpoint directory, so a savepoint can be moved.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from streamkernel.errors import CheckpointCorruptedError
from streamkernel.graph.stream_graph import StreamNode
from streamkernel.runtime.checkpoint import filesystem as fs

__all__ = [
    "operator_key",
    "METADATA_FILE",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "OperatorMetadata",
    "VertexMetadata",
    "JobCheckpointInfo",
    "FileMetadata",
    "CheckpointMetadata",
    "CompletedCheckpoint",
    "state_file_name",
]

METADATA_FILE = "_metadata"
"""The name of the metadata file; a checkpoint directory without it is not a checkpoint."""
FORMAT_NAME = "streamkernel-checkpoint"
"""The ``format`` field of every metadata file."""
FORMAT_VERSION = 1
"""The metadata format version this code writes and reads."""

SubtaskKey = tuple[int, int]


def operator_key(node: StreamNode) -> str:
    """The name an operator's state goes by in checkpoints (:attr:`StreamNode.operator_id`)."""
    return node.operator_id


def state_file_name(vertex_id: int, subtask_index: int) -> str:
    """The name of a subtask's state file in a checkpoint directory: ``<vertex id>-<subtask>.state``."""
    return f"{vertex_id}-{subtask_index}.state"


@dataclass(frozen=True)
class OperatorMetadata:
    """An operator as the checkpoint saw it: its job vertex, parallelism and max parallelism."""

    key: str
    name: str
    vertex_id: int
    parallelism: int
    max_parallelism: int
    uid: Optional[str] = None


@dataclass(frozen=True)
class VertexMetadata:
    """A job vertex (operator chain) as the checkpoint saw it; ``operators`` are operator keys."""

    vertex_id: int
    name: str
    parallelism: int
    max_parallelism: int
    operators: tuple[str, ...]


@dataclass(frozen=True)
class JobCheckpointInfo:
    """What the metadata says about the job besides the files: its name, operators and vertices."""

    job_name: str
    operators: Mapping[str, OperatorMetadata]
    vertices: Mapping[int, VertexMetadata]

    @classmethod
    def from_job_graph(cls, job_graph: Any) -> "JobCheckpointInfo":
        """The operators and vertices of a JobGraph, keyed as task snapshots key them."""
        operators: dict[str, OperatorMetadata] = {}
        vertices: dict[int, VertexMetadata] = {}
        for vertex in job_graph.vertices:
            keys = []
            for node in job_graph.operators(vertex.id):
                key = operator_key(node)
                keys.append(key)
                operators[key] = OperatorMetadata(key, node.name, vertex.id, vertex.parallelism,
                                                  node.max_parallelism, node.uid)
            vertices[vertex.id] = VertexMetadata(vertex.id, vertex.name, vertex.parallelism,
                                                 vertex.max_parallelism, tuple(keys))
        return cls(job_graph.job_name, operators, vertices)


@dataclass(frozen=True)
class FileMetadata:
    """One subtask's state file: its name in the checkpoint directory, size and SHA-256."""

    vertex_id: int
    subtask_index: int
    file: str
    size: int
    sha256: str


@dataclass(frozen=True)
class CheckpointMetadata:
    """The content of a ``_metadata`` file (see the module docstring)."""

    job_id: str
    job_name: str
    checkpoint_id: int
    timestamp: int
    is_savepoint: bool
    operators: Mapping[str, OperatorMetadata]
    vertices: Mapping[int, VertexMetadata]
    files: tuple[FileMetadata, ...]

    def to_json(self) -> str:
        """The metadata as JSON text."""
        return json.dumps({
            "format": FORMAT_NAME, "version": FORMAT_VERSION,
            "job_id": self.job_id, "job_name": self.job_name, "checkpoint_id": self.checkpoint_id,
            "timestamp": self.timestamp, "is_savepoint": self.is_savepoint,
            "operators": {key: {"name": op.name, "vertex_id": op.vertex_id, "parallelism": op.parallelism,
                                "max_parallelism": op.max_parallelism, "uid": op.uid}
                          for key, op in self.operators.items()},
            "vertices": {str(vid): {"name": v.name, "parallelism": v.parallelism,
                                    "max_parallelism": v.max_parallelism, "operators": list(v.operators)}
                         for vid, v in self.vertices.items()},
            "files": [{"vertex_id": f.vertex_id, "subtask_index": f.subtask_index, "file": f.file,
                       "size": f.size, "sha256": f.sha256} for f in self.files],
        }, indent=1)

    @classmethod
    def from_json(cls, text: str, path: str) -> "CheckpointMetadata":
        """Parse metadata read from ``path``; :class:`CheckpointCorruptedError` if it is not valid."""
        try:
            data = json.loads(text)
        except ValueError as error:
            raise CheckpointCorruptedError(path, f"is not valid JSON ({error}); the metadata is damaged") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
            raise CheckpointCorruptedError(path, f"is not {FORMAT_NAME} metadata")
        if data.get("version") != FORMAT_VERSION:
            raise CheckpointCorruptedError(
                path, f"has format version {data.get('version')!r}; this streamkernel reads version {FORMAT_VERSION}")
        try:
            operators = {str(key): OperatorMetadata(str(key), str(op["name"]), int(op["vertex_id"]),
                                                    int(op["parallelism"]), int(op["max_parallelism"]), op.get("uid"))
                         for key, op in data["operators"].items()}
            vertices = {int(vid): VertexMetadata(int(vid), str(v["name"]), int(v["parallelism"]),
                                                 int(v["max_parallelism"]), tuple(str(k) for k in v["operators"]))
                        for vid, v in data["vertices"].items()}
            files = tuple(FileMetadata(int(f["vertex_id"]), int(f["subtask_index"]), str(f["file"]), int(f["size"]),
                                       str(f["sha256"])) for f in data["files"])
            return cls(str(data["job_id"]), str(data["job_name"]), int(data["checkpoint_id"]),
                       int(data["timestamp"]), bool(data["is_savepoint"]), operators, vertices, files)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise CheckpointCorruptedError(path, f"misses or mangles a field ({type(error).__name__}: {error})") from None

    def file_of(self, vertex_id: int, subtask_index: int) -> Optional[FileMetadata]:
        """The state file of a subtask, or None if it stored nothing."""
        return next((f for f in self.files if f.vertex_id == vertex_id and f.subtask_index == subtask_index), None)


@dataclass(frozen=True)
class CompletedCheckpoint:
    """A checkpoint or savepoint whose metadata was written: restorable (Flink's ``CompletedCheckpoint``).

    ``path`` is its directory; ``metadata_size`` the bytes of its ``_metadata`` file (0 when not
    known: Flink's ``lastCheckpointMetadataSize``). :meth:`task_state` reads a subtask's snapshot,
    checking its size and checksum first. Loading unpickles the files: restore only checkpoints
    you trust.
    """

    path: str
    metadata: CheckpointMetadata
    metadata_size: int = 0

    @property
    def checkpoint_id(self) -> int:
        """The checkpoint's id."""
        return self.metadata.checkpoint_id

    @property
    def job_id(self) -> str:
        """The id of the job that took it."""
        return self.metadata.job_id

    @property
    def timestamp(self) -> int:
        """When it was triggered (ms since the epoch)."""
        return self.metadata.timestamp

    @property
    def is_savepoint(self) -> bool:
        """Whether this is a savepoint."""
        return self.metadata.is_savepoint

    @property
    def state_size(self) -> int:
        """Bytes of state files."""
        return sum(f.size for f in self.metadata.files)

    @property
    def metadata_path(self) -> str:
        """The path of the ``_metadata`` file."""
        return fs.join(self.path, METADATA_FILE)

    def verify(self) -> None:
        """Check that every state file exists with the recorded size and checksum (raises
        :class:`CheckpointCorruptedError` naming the first bad file)."""
        for entry in self.metadata.files:
            fs.read_verified(fs.join(self.path, entry.file), entry.size, entry.sha256)

    def task_state(self, vertex_id: int, subtask_index: int) -> Optional[dict]:
        """The snapshot subtask ``subtask_index`` of vertex ``vertex_id`` stored
        (``{operator key: {"keyed", "operator", "timers", "raw"}}``), or None if none."""
        entry = self.metadata.file_of(vertex_id, subtask_index)
        if entry is None:
            return None
        path = fs.join(self.path, entry.file)
        data = fs.read_verified(path, entry.size, entry.sha256)
        try:
            snapshot = pickle.loads(data)
        except Exception as error:  # noqa: BLE001 - any unpickling failure means the file is unusable
            raise CheckpointCorruptedError(
                path, f"cannot be unpickled ({type(error).__name__}: {error}); is the code that "
                      "wrote it importable here?") from None
        if not isinstance(snapshot, dict):
            raise CheckpointCorruptedError(path, f"holds a {type(snapshot).__name__}, not a task snapshot")
        return snapshot

    def task_states(self) -> dict[SubtaskKey, dict]:
        """Every subtask's snapshot, verified, by (vertex id, subtask index)."""
        result: dict[SubtaskKey, dict] = {}
        for entry in self.metadata.files:
            snapshot = self.task_state(entry.vertex_id, entry.subtask_index)
            if snapshot is not None:
                result[(entry.vertex_id, entry.subtask_index)] = snapshot
        return result

    def __repr__(self) -> str:
        kind = "savepoint" if self.is_savepoint else "checkpoint"
        return f"CompletedCheckpoint({kind} {self.checkpoint_id} of job {self.job_id}, {self.path!r})"
