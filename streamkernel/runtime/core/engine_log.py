"""Where the engine logs: the cluster's log files, not the user program's logger (Flink's log files).

Flink's JobManager and TaskManagers log to their log files (``log.file``); a PyFlink program
that calls ``logging.basicConfig(stream=sys.stdout, level=logging.INFO)`` sees none of it.
streamkernel's engine logs through the ``streamkernel`` logger hierarchy, in the user's
process when the cluster runs there (a notebook's kernel, a script's ``env.execute()``), so:

* While a cluster runs in this process (:func:`install_engine_log`, one call per cluster),
  the ``streamkernel`` logger does not propagate to the root logger: its records go to the
  cluster's log file (at INFO unless the ``streamkernel`` logger has a level of its own), and
  to handlers a user put on ``streamkernel`` itself.
* Records that concern the user's program (their job restarts or failed, their checkpoint or
  configuration is unusable: ``docs/architecture.md`` lists them) are marked with ``extra=CONCERNS_USER``; at
  WARNING and above they are forwarded to the root logger as well, so they reach the
  notebook or the program's own logging (one line: the full trace stays in the log file).
* A standalone cluster's process (:func:`configure_process_log`) logs everything, its root
  logger included, to its own log file: there the log file *is* the process's logger, and a
  MiniCluster started in it (the standalone JobManager) uses that file.

Without a cluster in the process the ``streamkernel`` logger propagates as any library's does.

>>> import logging
>>> logging.getLogger("streamkernel.demo").warning("your checkpoint directory is full", extra=CONCERNS_USER)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Mapping, Optional, Union

__all__ = ["CONCERNS_USER", "ENGINE_LOGGER", "LOG_FORMAT", "EngineLog", "UserProgramForwarder", "concerns_user",
           "configure_process_log", "install_engine_log", "process_log_file"]

#: The logger every engine module logs under (``logging.getLogger(__name__)`` in ``streamkernel.*``).
ENGINE_LOGGER = "streamkernel"
#: ``extra=`` of a record that concerns the user's program: forwarded to the root logger at WARNING+.
CONCERNS_USER: Mapping[str, bool] = {"concerns_user": True}
#: The line format of the log files (Flink's log4j pattern: time, level, logger, message).
LOG_FORMAT = "%(asctime)s %(levelname)-5s %(name)s [%(threadName)s] - %(message)s"

# Guards the fields below: which files are installed, and what the logger looked like before.
_lock = threading.Lock()
_installed: list["EngineLog"] = []
_forwarder: Optional["UserProgramForwarder"] = None
_level_before: Optional[int] = None
_propagate_before = True
_process_log: Optional[Path] = None


def concerns_user(record: logging.LogRecord) -> bool:
    """Whether ``record`` was logged with ``extra=CONCERNS_USER``."""
    return bool(getattr(record, "concerns_user", False))


class UserProgramForwarder(logging.Handler):
    """Hands the root logger the WARNING+ records that concern the user's program, as one line.

    The forwarded record is a copy without the exception's trace (the log file has it); the
    root logger's own level applies, as it would have to a propagated record.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        """Forward ``record`` when it concerns the user and the root logger takes its level."""
        if not concerns_user(record):
            return
        root = logging.getLogger()
        if not root.isEnabledFor(record.levelno):
            return
        copy = logging.makeLogRecord(record.__dict__)
        copy.exc_info, copy.exc_text, copy.stack_info = None, None, None
        root.handle(copy)


class EngineLog:
    """One cluster's log file while it is installed (:func:`install_engine_log`); :meth:`close` removes it."""

    def __init__(self, path: Path, handler: Optional[logging.Handler]) -> None:
        self.path = path
        self._handler = handler

    def close(self) -> None:
        """Stop writing to the file; the last one closed gives the ``streamkernel`` logger back to the root."""
        global _forwarder, _level_before
        with _lock:
            if self not in _installed:
                return
            _installed.remove(self)
            logger = logging.getLogger(ENGINE_LOGGER)
            if self._handler is not None:
                logger.removeHandler(self._handler)
                self._handler.close()
            if any(log._handler is not None for log in _installed):
                return
            if _forwarder is not None:
                logger.removeHandler(_forwarder)
                _forwarder = None
            logger.propagate = _propagate_before
            if _level_before is not None and logger.level == logging.INFO:  # unless the user set one meanwhile
                logger.setLevel(_level_before)
            _level_before = None

    def __repr__(self) -> str:
        return f"EngineLog({str(self.path)!r})"


def install_engine_log(path: Union[str, Path]) -> EngineLog:
    """Log the engine to ``path`` (appended; its directory created) until the returned EngineLog is closed.

    In a process whose log was configured by :func:`configure_process_log`, that file already
    has every record: nothing is installed and the EngineLog names the process's file.
    """
    global _forwarder, _level_before, _propagate_before
    with _lock:
        if _process_log is not None:
            log = EngineLog(_process_log, None)
            _installed.append(log)
            return log
        file = Path(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(file, encoding="utf-8")
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        logger = logging.getLogger(ENGINE_LOGGER)
        if _forwarder is None:
            _forwarder = UserProgramForwarder()
            logger.addHandler(_forwarder)
            _propagate_before, logger.propagate = logger.propagate, False
            if logger.level == logging.NOTSET:  # the user's level, if they set one, wins
                _level_before = logging.NOTSET
                logger.setLevel(logging.INFO)
        logger.addHandler(handler)
        log = EngineLog(file, handler)
        _installed.append(log)
        return log


def configure_process_log(path: Union[str, Path]) -> None:
    """A standalone cluster process's log: every record of the process (root logger, INFO) goes to ``path``.

    Called once at the start of a JobManager or TaskManager process; clusters started in the
    process afterwards log there too (:func:`install_engine_log`).
    """
    global _process_log
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(file, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    with _lock:
        _process_log = file


def process_log_file() -> Optional[Path]:
    """The process's log file set by :func:`configure_process_log`, else None."""
    return _process_log
