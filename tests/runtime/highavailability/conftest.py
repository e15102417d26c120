"""The ZooKeeper server of the high-availability tests: one throwaway ZooKeeper per test module
(``streamkernel.testing.zookeeper``); the tests separate themselves by cluster id. Without ZooKeeper
installed, the tests that use it skip saying how to install it (``make test`` does)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from ha_testkit import zookeeper_server  # noqa: E402


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A ZooKeeper server for the module, stopped afterwards."""
    zookeeper_server.require_zookeeper()
    server = zookeeper_server.ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        yield server
    finally:
        server.close()


