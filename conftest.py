"""Settings for every test session (tests/ and the notebooks run by nbval).

Clusters started by the tests (in this process, in subprocesses, in notebook kernels) write
their secret to ``$STREAMKERNEL_HOME/clusters``; a test that SIGKILLs a cluster on purpose
leaves that file behind. So a session gets a home of its own, removed when it ends, and the
user's ``~/.streamkernel`` is never touched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

_HOME = tempfile.mkdtemp(prefix="streamkernel-test-home-")
os.environ["STREAMKERNEL_HOME"] = _HOME


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Remove the session's home."""
    shutil.rmtree(_HOME, ignore_errors=True)


ROOT = Path(__file__).resolve().parent

#: The longest files of the suite, longest first (seconds of a quiet ``make test`` run on a 2-core machine,
#: measured with --durations on 2026-11-26; a machine loaded by other runs takes about twice as long): handed out
#: before every other file, so that no worker starts one of them late while the other runs out of
#: files. A long file that is not here still goes early if it starts a JVM or is a notebook.
LONGEST_FIRST = (
    "tests/spark/test_spark_connectors.py",  # 135 s, a SparkSession but no test marked spark
    "tests/spark/test_spark_standalone.py",  # 105
    "tests/runtime/test_backend_matrix_spark_end_to_end.py",  # 85 (half of test_end_to_end.py on spark)
    "tests/runtime/test_backend_matrix_spark_end_to_end_odd.py",  # 85 (the other half)
    "tests/runtime/highavailability/test_spark_takeover.py",  # 85
    "tests/runtime/jobmaster/test_unaligned_checkpoints.py",  # 85
    "notebooks/08_deployment_modes.ipynb",  # 80
    "tests/runtime/test_backend_matrix_process_programs.py",  # 74
    "tests/runtime/test_backend_matrix_spark_programs.py",  # 72
    "tests/runtime/rest/test_flink_cli.py",  # 70, Flink's CLI (a JVM per command)
    "notebooks/05_taskmanagers_on_spark.ipynb",  # 65
    "tests/spark/test_spark_application_standalone.py",  # 64
    "tests/deployment/test_standalone_spark.py",  # 60
    "notebooks/06_debugging_a_stream.ipynb",  # 60
    "tests/spark/test_spark_application.py",  # 55
    "tests/spark/test_spark_launcher.py",  # 45
    "tests/runtime/test_backend_matrix_process_end_to_end.py",  # 40
    "tests/jupyter/test_backend_magics.py",  # 35
    "notebooks/07_the_rest_api_and_web_ui.ipynb",  # 30
    "tests/runtime/highavailability/test_ha_chaos.py",  # 30 (added 2026-11-29: four JobManager/TaskManager processes)
    "tests/compat/test_pyflink_programs.py",  # 30
    "tests/browser/test_jupyterlab_cockpit.py",  # 30
)


def _relative(path: Path) -> str:
    """``path`` as LONGEST_FIRST names it (relative to the repository, with slashes)."""
    try:
        return path.relative_to(ROOT).as_posix() if path.is_absolute() else path.as_posix()
    except ValueError:  # not under the repository
        return path.as_posix()


def pytest_collection_modifyitems(session: Any, config: Any, items: list) -> None:
    """Under pytest-xdist (``make test``: ``-n 3 --dist loadfile --no-loadscope-reorder``), the longest
    units of work are handed out first: the files of :data:`LONGEST_FIRST` in its order, then the
    other files that start a JVM (a test marked ``spark``) and the notebooks (a kernel each); a
    worker still running a long file after the other worker ran out of files is the suite's tail.
    The order inside a file is kept (a notebook's cells run in order); a run without xdist keeps
    the collection order.
    """
    if not hasattr(config, "workerinput"):  # the xdist controller or a plain run
        return
    rank = {name: position for position, name in enumerate(LONGEST_FIRST)}
    long_files = {item.path for item in items
                  if item.get_closest_marker("spark") is not None or item.path.suffix == ".ipynb"}

    def key(item: Any) -> tuple[int, int]:
        listed = rank.get(_relative(item.path))
        if listed is not None:
            return 0, listed
        return (1 if item.path in long_files else 2), 0

    items.sort(key=key)  # stable: files and cells keep their order
