"""Every test here starts without a current cluster and leaves none behind."""

from __future__ import annotations

from typing import Iterator

import pytest

from streamkernel.runtime.minicluster.minicluster import current_cluster, set_current_cluster


@pytest.fixture(autouse=True)
def no_current_cluster() -> Iterator[None]:
    """No current cluster before the test; the one it left current (if any) is stopped after."""
    set_current_cluster(None)
    yield
    leftover = current_cluster()
    if leftover is not None:
        leftover.stop()
    set_current_cluster(None)
