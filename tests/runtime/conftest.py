"""tests/runtime mirrors streamkernel/runtime's packages; the test helpers they share live here.

This directory is put on ``sys.path`` so that every test under it can ``import operator_harness``
(the operator test harness) wherever it sits.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Iterator

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def engine_caplog(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """``caplog`` that also sees the engine's records while a cluster started by the test runs in this
    process (the ``streamkernel`` logger does not propagate then: ``runtime/core/engine_log.py``).
    While no cluster runs a record reaches it twice (here and through the root logger)."""
    logger = logging.getLogger("streamkernel")
    logger.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
