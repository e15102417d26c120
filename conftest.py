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
