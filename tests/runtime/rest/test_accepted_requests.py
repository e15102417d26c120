"""The accepted-request store that keeps a signed job submission from being replayed to another
JobManager of the cluster (issue 29): shared by guards of different processes through a directory,
expired entries removed, and a store that cannot be written refusing the request."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamkernel.runtime.rest.accepted_requests import AcceptedRequestStore, AcceptedRequestStoreError
from streamkernel.runtime.rest.job_signature import MAX_SKEW_MS, ReplayGuard, SignatureError, sign

SECRET = b"s" * 32
NOW = 1_800_000_000_000


def _signature(body: bytes, timestamp: int = NOW) -> str:
    return sign(SECRET, timestamp, body)


def test_a_request_one_guard_accepted_is_refused_by_another_on_the_same_directory(tmp_path: Path) -> None:
    leader = ReplayGuard(AcceptedRequestStore(str(tmp_path / "accepted"), MAX_SKEW_MS))
    successor = ReplayGuard(AcceptedRequestStore(str(tmp_path / "accepted"), MAX_SKEW_MS))
    signature = _signature(b"job")
    leader.check(signature, str(NOW), now_ms=NOW, durable=True)
    with pytest.raises(SignatureError, match="replay"):
        successor.check(signature, str(NOW), now_ms=NOW + 1000, durable=True)
    # another request goes through; a request checked without ``durable`` (a collect fetch) stays in memory
    successor.check(_signature(b"other job"), str(NOW), now_ms=NOW, durable=True)
    leader.check(_signature(b"fetch"), str(NOW), now_ms=NOW)
    successor.check(_signature(b"fetch"), str(NOW), now_ms=NOW)
    assert len(os.listdir(tmp_path / "accepted")) == 2


def test_entries_older_than_the_window_are_removed(tmp_path: Path) -> None:
    store = AcceptedRequestStore(str(tmp_path), MAX_SKEW_MS)
    assert store.record(_signature(b"old"), NOW, NOW)
    assert not store.record(_signature(b"old"), NOW, NOW)
    later = NOW + MAX_SKEW_MS + 120_000
    assert store.record(_signature(b"new", later), later, later)
    assert [name.split("-")[0] for name in os.listdir(tmp_path)] == [f"{later:015d}"]


def test_a_store_that_cannot_be_written_refuses_the_request_naming_the_directory(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    guard = ReplayGuard(AcceptedRequestStore(str(blocker / "accepted"), MAX_SKEW_MS))
    with pytest.raises(AcceptedRequestStoreError, match=str(blocker / "accepted")):
        guard.check(_signature(b"job"), str(NOW), now_ms=NOW, durable=True)
