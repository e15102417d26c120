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
from typing import Any

_HOME = tempfile.mkdtemp(prefix="streamkernel-test-home-")
os.environ["STREAMKERNEL_HOME"] = _HOME


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """Remove the session's home."""
    shutil.rmtree(_HOME, ignore_errors=True)


def pytest_collection_modifyitems(session: Any, config: Any, items: list) -> None:
    """Under pytest-xdist (``make test``: ``-n 2 --dist loadfile --no-loadscope-reorder``), the files
    that start a JVM (a test marked ``spark``) and the notebooks (a kernel each) are handed out
    first: they are the longest units of work, and a worker still running one after the other
    worker ran out of files is the suite's tail. The order inside a file is kept (a notebook's
    cells run in order); a run without xdist keeps the collection order.
    """
    if not hasattr(config, "workerinput"):  # the xdist controller or a plain run
        return
    long_files = {item.path for item in items
                  if item.get_closest_marker("spark") is not None or item.path.suffix == ".ipynb"}
    items.sort(key=lambda item: item.path not in long_files)  # stable: files and cells keep their order
