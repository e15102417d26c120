"""The two job result stores: in memory (Flink's ``EmbeddedJobResultStore``) and in files
(Flink's ``FileSystemJobResultStore``: ``<storageDir>/job-result-store/<cluster-id>/``).

A file store entry is ``<job-id>_DIRTY.json`` until the job's data is cleaned up, then
``<job-id>.json`` (the same JSON, renamed), as Flink writes them::

    {"result": {"id": ..., "application-status": "FINISHED", "accumulator-results": {}, "net-runtime": 12},
     "version": 1}
"""

from __future__ import annotations

import json
import threading
from typing import Any

from streamkernel.runtime.checkpoint import filesystem as fs
from streamkernel.runtime.highavailability.stores import JobResult, JobResultEntry, JobResultStore

__all__ = ["EmbeddedJobResultStore", "FileSystemJobResultStore", "DIRTY_SUFFIX", "FILE_SUFFIX"]

DIRTY_SUFFIX = "_DIRTY.json"
FILE_SUFFIX = ".json"


class EmbeddedJobResultStore(JobResultStore):
    """Job results in this process's memory (the NONE services)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dirty: dict[str, JobResult] = {}
        self._clean: dict[str, JobResult] = {}

    def create_dirty_result(self, entry: JobResultEntry) -> None:
        with self._lock:
            if entry.job_id in self._dirty or entry.job_id in self._clean:
                raise ValueError(f"The job result store holds an entry for job {entry.job_id} already")
            self._dirty[entry.job_id] = entry.job_result

    def mark_result_as_clean(self, job_id: str) -> None:
        with self._lock:
            if job_id in self._clean:
                return
            if job_id not in self._dirty:
                raise KeyError(f"The job result store has no dirty entry for job {job_id}")
            self._clean[job_id] = self._dirty.pop(job_id)

    def has_dirty_job_result_entry(self, job_id: str) -> bool:
        with self._lock:
            return job_id in self._dirty

    def has_clean_job_result_entry(self, job_id: str) -> bool:
        with self._lock:
            return job_id in self._clean

    def get_dirty_results(self) -> list[JobResult]:
        with self._lock:
            return list(self._dirty.values())


def _to_json(result: JobResult) -> bytes:
    body: dict[str, Any] = {"id": result.job_id, "application-status": result.application_status,
                            "accumulator-results": result.accumulator_results, "net-runtime": result.net_runtime_ms}
    if result.failure is not None:
        body["failure-cause"] = result.failure
    return json.dumps({"result": body, "version": 1}).encode()


def _from_json(data: bytes, path: str) -> JobResult:
    try:
        body = json.loads(data.decode())["result"]
        return JobResult(str(body["id"]), str(body["application-status"]), int(body.get("net-runtime", 0)),
                         dict(body.get("accumulator-results") or {}), body.get("failure-cause"))
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"The job result file {path} is not a job result ({type(error).__name__}: {error})") from None


class FileSystemJobResultStore(JobResultStore):
    """Job results as files in ``base_path`` (``<storageDir>/job-result-store/<cluster-id>``), which
    every JobManager of the cluster reads: a finished job is not recovered by the next leader."""

    def __init__(self, base_path: str) -> None:
        self.base_path = base_path
        fs.makedirs(base_path)

    def _path(self, job_id: str, dirty: bool) -> str:
        return fs.join(self.base_path, job_id + (DIRTY_SUFFIX if dirty else FILE_SUFFIX))

    def create_dirty_result(self, entry: JobResultEntry) -> None:
        if self.has_job_result_entry(entry.job_id):
            raise ValueError(f"The job result store {self.base_path} holds an entry for job {entry.job_id} already")
        fs.write_bytes(self._path(entry.job_id, True), _to_json(entry.job_result))

    def mark_result_as_clean(self, job_id: str) -> None:
        if self.has_clean_job_result_entry(job_id):
            return
        dirty = self._path(job_id, True)
        if not fs.exists(dirty):
            raise KeyError(f"The job result store {self.base_path} has no dirty entry for job {job_id}")
        data = fs.read_bytes(dirty)
        fs.write_bytes(self._path(job_id, False), data)
        fs.remove(dirty)

    def has_dirty_job_result_entry(self, job_id: str) -> bool:
        return fs.exists(self._path(job_id, True))

    def has_clean_job_result_entry(self, job_id: str) -> bool:
        return fs.exists(self._path(job_id, False))

    def get_dirty_results(self) -> list[JobResult]:
        results = []
        for name in sorted(fs.listdir(self.base_path)):
            if name.endswith(DIRTY_SUFFIX):
                path = fs.join(self.base_path, name)
                results.append(_from_json(fs.read_bytes(path), path))
        return results
