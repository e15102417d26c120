"""The SparkSession the ``spark`` backend runs on: given by the user, or created for the cluster.

* A session passed in (``spark_session=``, ``%flink start --spark-session NAME``) is used as
  it is and never stopped by streamkernel: it belongs to the notebook.
* Otherwise one is created from the master (``master=``, else ``spark.master`` in the
  configuration, else ``local[N,F]``) and every ``spark.*`` key of the cluster's
  configuration; the launcher stops it with the cluster. If a SparkContext already runs in
  the process (Spark allows one per process) it is used and not stopped.

Defaults for a session we create (each overridable by a ``spark.*`` key):
``spark.ui.showConsoleProgress=false`` (the progress bar draws over notebook output),
``spark.python.worker.reuse=false`` (a TaskManager's Python worker exits with its task, so
nothing of a TaskManager outlives it), and for local masters ``spark.driver.host`` /
``spark.driver.bindAddress`` = 127.0.0.1 and ``spark.pyspark.python`` = this interpreter.

Which Python runs the TaskManagers (:func:`taskmanager_python`): ``spark.pyspark.python``
if set, else ``PYSPARK_PYTHON``, else this interpreter for local masters (the executors
are this machine, which has streamkernel) and Spark's own default (``python3``) for
clusters, whose Python must have streamkernel (and the user's modules) installed.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional

from streamkernel.common.options import BackendOptions
from streamkernel.errors import IllegalConfigurationError, StreamKernelError
from streamkernel.runtime.taskmanager.spark_resources import default_local_master, is_local_master

__all__ = ["SparkHostJobError", "OwnedSession", "obtain_session", "taskmanager_python", "python_exec_for",
           "explain_job_failure", "task_tries", "DEFAULT_MAX_FAILURES"]

_LOG = logging.getLogger(__name__)

#: Tries per TaskManager host under the default local master (the F of ``local[N,F]``),
#: unless ``spark.task.maxFailures`` is configured. A host killed more often than this ends
#: the whole background job (Spark aborts a job whose task failed F times), so it is
#: higher than Spark's 4: the job's own restart strategy is what bounds recovery.
DEFAULT_MAX_FAILURES: int = BackendOptions.SPARK_TASK_MAX_FAILURES.default_value()  # type: ignore[assignment]

# sc.pythonExec is read when an RDD's Java side is built: swapped only for that moment.
_PYTHON_EXEC_LOCK = threading.Lock()


class SparkHostJobError(StreamKernelError):
    """The background Spark job hosting TaskManagers failed; the message says why and what to do."""


class OwnedSession:
    """A SparkSession and whether the launcher created it (and must stop it)."""

    def __init__(self, session: Any, owned: bool, startup_seconds: Optional[float]) -> None:
        self.session = session
        self.owned = owned
        self.startup_seconds = startup_seconds

    @property
    def spark_context(self) -> Any:
        """The session's SparkContext."""
        return self.session.sparkContext


def session_defaults(master: str) -> dict[str, str]:
    """The configuration of a session we create for ``master``, before the user's ``spark.*`` keys."""
    defaults = {"spark.ui.showConsoleProgress": "false", "spark.python.worker.reuse": "false",
                "spark.app.name": "streamkernel"}
    if is_local_master(master):
        defaults.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                         "spark.pyspark.python": sys.executable})
    return defaults


def obtain_session(configuration: Mapping[str, str], master: Optional[str], taskmanagers: int) -> OwnedSession:
    """The session to launch TaskManagers on when none was given: the process's running one, or a new one.

    ``taskmanagers`` sizes the default local master ``local[N + cores, F]``: one Spark task
    slot per TaskManager, plus one per core of this machine for the session's other Spark
    jobs (DataFrame sources and sinks, the user's queries) and for TaskManagers added later.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    wanted = master or BackendOptions.SPARK_MASTER.get(configuration)
    active = SparkContext._active_spark_context
    if active is not None:
        if wanted and wanted != active.master:
            raise IllegalConfigurationError(
                f"A SparkContext with master {active.master!r} already runs in this process and Spark allows only one: "
                f"pass that session (spark_session=..., %flink start --spark-session NAME) without a master, or stop it "
                f"first to start TaskManagers on {wanted!r}.")
        _LOG.info("spark backend: using the SparkContext already running in this process (master %s)", active.master)
        return OwnedSession(SparkSession.builder.getOrCreate(), owned=False, startup_seconds=None)
    failures = BackendOptions.SPARK_TASK_MAX_FAILURES.get(configuration)
    chosen = wanted or default_local_master(
        taskmanagers, failures, os.cpu_count() or 1)
    settings = session_defaults(chosen)
    settings.update({k: str(v) for k, v in configuration.items() if k.startswith("spark.") and k != "spark.master"})
    builder = SparkSession.builder.master(chosen)
    for key, value in settings.items():
        builder = builder.config(key, value)
    started = time.monotonic()
    session = builder.getOrCreate()
    elapsed = time.monotonic() - started
    _LOG.info("spark backend: started a SparkSession on %s in %.1f s", chosen, elapsed)
    return OwnedSession(session, owned=True, startup_seconds=elapsed)


def taskmanager_python(spark_context: Any) -> str:
    """The Python executable the TaskManager tasks run with (see the module's docstring)."""
    configured = spark_context.getConf().get("spark.pyspark.python", None)
    if configured:
        return str(configured)
    if os.environ.get("PYSPARK_PYTHON"):
        return str(spark_context.pythonExec)
    if is_local_master(str(spark_context.master)):
        return sys.executable
    return str(spark_context.pythonExec)


def task_tries(spark_context: Any) -> int:
    """How often Spark tries a task: the F of ``local[N,F]`` (1 for ``local[N]``), else ``spark.task.maxFailures``."""
    master = str(spark_context.master).strip()
    local = re.match(r"^local(?:\[\s*(?:\*|\d+)\s*(?:,\s*(\d+)\s*)?\])?$", master)
    if local:
        return int(local.group(1) or 1)
    return int(spark_context.getConf().get("spark.task.maxFailures", "4"))


@contextmanager
def python_exec_for(spark_context: Any, executable: str) -> Iterator[None]:
    """Within the block, RDDs built (``rdd._jrdd``) on ``spark_context`` run ``executable``.

    The SparkContext may be the user's: its ``pythonExec`` is changed only for the block.
    """
    with _PYTHON_EXEC_LOCK:
        previous = spark_context.pythonExec
        spark_context.pythonExec = executable
        try:
            yield
        finally:
            spark_context.pythonExec = previous


_MISSING_MODULE = re.compile(r"(ModuleNotFoundError: No module named '[^']+')")
_PY_EXC = re.compile(r"^\s*(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt)\b.*)$", re.MULTILINE)
_HOST_FAILED = ("PythonException", "Python worker exited unexpectedly", "Job aborted due to stage failure")


def explain_job_failure(error: BaseException, ids: list[str], python: str, master: str,
                        tries: int) -> SparkHostJobError:
    """Turn the exception of a failed TaskManager job into a clear error.

    PySpark 4 raises the root cause only (the Python exception of the last try), so a
    host's failure is recognised by its kind; ``tries`` (spark.task.maxFailures or the F of
    local[N,F]) is what Spark allowed each host.
    """
    text = f"{type(error).__name__}: {error}"
    subject = f"The Spark job hosting TaskManagers {', '.join(ids)} (master {master}) failed"
    missing = _MISSING_MODULE.search(text)
    if missing:
        return SparkHostJobError(
            f"{subject}: its Python workers ({python}) cannot import what they need ({missing.group(1)}). Install "
            f"streamkernel (and the modules your functions import) into the executors' Python, or point "
            f"spark.pyspark.python / PYSPARK_PYTHON at a Python that has them.")
    causes = [m.strip() for m in _PY_EXC.findall(str(error)) if "py4j" not in m.lower()]
    cause = f"; last error: {causes[-1][:300]}" if causes else ""
    if any(marker in text for marker in _HOST_FAILED):
        return SparkHostJobError(
            f"{subject}: a TaskManager host failed on each of the {tries} tries Spark allows a task, so Spark "
            f"ended the job, and with it every TaskManager it hosted{cause}. Raise the tries per task "
            f"(spark.task.maxFailures, or the F of local[N,F]) if hosts are killed on purpose.")
    first = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
    return SparkHostJobError(f"{subject}: {type(error).__name__}: {first}{cause}")
