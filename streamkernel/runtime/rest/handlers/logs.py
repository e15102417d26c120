"""Log files: ``/jobmanager/logs``, ``/jobmanager/log``, ``/jobmanager/stdout``, ``/jobmanager/logs/:filename``
and the same under ``/taskmanagers/:taskmanagerid``, in Flink's shapes (a ``LogListInfo``
``{"logs": [{"name", "size", "mtime"}]}``, files as ``text/plain``).

The JobManager's log is the cluster's log file (``MiniCluster.log_file``: the configuration's
``log.file``, Flink's key, which a standalone cluster's JobManager process sets; else the in-kernel
cluster's own file) and the directory listed is ``env.log.dir`` (else the log file's directory);
stdout is the ``.out`` file next to the log. A TaskManager reports its ``log.file`` when it
registers (TaskManager threads of the in-kernel cluster: the cluster's file); its files are read
where the JobManager runs (a standalone cluster on one machine; a TaskManager on another machine
gets 404 naming the file). A TaskManager without a log file of its own (a ``process`` backend
child, whose output is the notebook's) gets 404 saying so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from streamkernel.common.options import CoreOptions
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler

__all__ = ["ROUTES", "LOG_FILE_KEY", "LOG_DIR_KEY"]

#: Flink's keys: a process's log file, and the directory of the log files.
LOG_FILE_KEY, LOG_DIR_KEY = CoreOptions.LOG_FILE.key(), CoreOptions.LOG_DIR.key()


def _log_list(directory: Path) -> dict:
    logs = []
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        try:
            info = path.stat()
        except OSError:
            continue
        if path.is_file():
            logs.append({"name": path.name, "size": info.st_size, "mtime": int(info.st_mtime * 1000)})
    return {"logs": logs}


class _LogFiles(RestHandler):
    """The log files of one process: ``_log_file`` says which (None: the process has none)."""

    def _log_file(self, **kwargs: str) -> tuple[Optional[str], str]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _log_dir(self, log_file: str) -> Path:
        return Path(log_file).parent

    def _file(self, what: str, **kwargs: str) -> Path:
        log_file, who = self._log_file(**kwargs)
        if not log_file:
            raise RestError(404, f"{who} has no log file (log.file is not set: it runs in another process's "
                                 f"output, e.g. the notebook's)")
        if what == "log":
            return Path(log_file)
        if what == "stdout":
            return Path(log_file).with_suffix(".out")
        if what == "logs":
            return self._log_dir(log_file)
        if "/" in what or os.sep in what or what in ("", ".", ".."):
            raise RestError(404, f"{who}: no log file named {what!r}")
        return self._log_dir(log_file) / what

    def _send(self, path: Path) -> None:
        try:
            content = path.read_bytes()
        except OSError as error:
            raise RestError(404, f"cannot read the log file {path}: {error.strerror or error}") from None
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.finish(content)


class _JobManagerLogFiles(_LogFiles):
    def _log_file(self, **kwargs: str) -> tuple[Optional[str], str]:
        return self.context.log_file or self.context.configuration.get(LOG_FILE_KEY), "The JobManager"

    def _log_dir(self, log_file: str) -> Path:
        directory = self.context.configuration.get(LOG_DIR_KEY)
        return Path(directory) if directory else Path(log_file).parent


class JobManagerLogListHandler(_JobManagerLogFiles):
    """``GET /jobmanager/logs``: the files of the JobManager's log directory."""

    def get(self) -> None:
        """Flink's LogListInfo."""
        self.write_json(_log_list(self._file("logs")))


class JobManagerLogHandler(_JobManagerLogFiles):
    """``GET /jobmanager/log``: the JobManager's log file."""

    def get(self) -> None:
        """The file as text."""
        self._send(self._file("log"))


class JobManagerStdoutHandler(_JobManagerLogFiles):
    """``GET /jobmanager/stdout``: the JobManager's stdout and stderr (its ``.out`` file)."""

    def get(self) -> None:
        """The file as text."""
        self._send(self._file("stdout"))


class JobManagerCustomLogHandler(_JobManagerLogFiles):
    """``GET /jobmanager/logs/:filename``: one file of the JobManager's log directory."""

    def get(self, filename: str) -> None:
        """The file as text."""
        self._send(self._file(filename))


class _TaskManagerLogFiles(_LogFiles):
    def _log_file(self, taskmanagerid: str = "", **kwargs: str) -> tuple[Optional[str], str]:
        try:
            gateway = self.context.resource_manager.task_executor_gateway(taskmanagerid)
        except KeyError:
            raise RestError(404, f"Could not find TaskExecutor {taskmanagerid}.") from None
        return getattr(gateway, "log_file", None), f"TaskManager {taskmanagerid}"


class TaskManagerLogListHandler(_TaskManagerLogFiles):
    """``GET /taskmanagers/:taskmanagerid/logs``: the files of the TaskManager's log directory."""

    def get(self, taskmanagerid: str) -> None:
        """Flink's LogListInfo."""
        self.write_json(_log_list(self._file("logs", taskmanagerid=taskmanagerid)))


class TaskManagerLogHandler(_TaskManagerLogFiles):
    """``GET /taskmanagers/:taskmanagerid/log``: the TaskManager's log file."""

    def get(self, taskmanagerid: str) -> None:
        """The file as text."""
        self._send(self._file("log", taskmanagerid=taskmanagerid))


class TaskManagerStdoutHandler(_TaskManagerLogFiles):
    """``GET /taskmanagers/:taskmanagerid/stdout``: the TaskManager's ``.out`` file (what its tasks print)."""

    def get(self, taskmanagerid: str) -> None:
        """The file as text."""
        self._send(self._file("stdout", taskmanagerid=taskmanagerid))


class TaskManagerCustomLogHandler(_TaskManagerLogFiles):
    """``GET /taskmanagers/:taskmanagerid/logs/:filename``: one file of the TaskManager's log directory."""

    def get(self, taskmanagerid: str, filename: str) -> None:
        """The file as text."""
        self._send(self._file(filename, taskmanagerid=taskmanagerid))


ROUTES = [
    ("/jobmanager/logs", JobManagerLogListHandler),
    ("/jobmanager/log", JobManagerLogHandler),
    ("/jobmanager/stdout", JobManagerStdoutHandler),
    ("/jobmanager/logs/:filename", JobManagerCustomLogHandler),
    ("/taskmanagers/:taskmanagerid/logs", TaskManagerLogListHandler),
    ("/taskmanagers/:taskmanagerid/log", TaskManagerLogHandler),
    ("/taskmanagers/:taskmanagerid/stdout", TaskManagerStdoutHandler),
    ("/taskmanagers/:taskmanagerid/logs/:filename", TaskManagerCustomLogHandler),
]
