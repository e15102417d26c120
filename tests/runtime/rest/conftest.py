"""One cluster with a running, checkpointing job per test module (a job per test would be slow)."""

from __future__ import annotations

from typing import Iterator

import pytest
from rest_job import RunningJob, running_job as start_running_job  # tests/runtime/ is on sys.path


@pytest.fixture(scope="module")
def running_job() -> Iterator[RunningJob]:
    """The cluster, its REST client and the job (see rest_job.running_job)."""
    with start_running_job() as job:
        yield job
