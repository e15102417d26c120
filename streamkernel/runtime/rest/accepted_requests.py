"""The signed requests a cluster accepted, kept where every JobManager of the cluster finds them.

A signed job submission may be replayed by whoever saw it (a proxy, a log) while its timestamp
is within :data:`~streamkernel.runtime.rest.job_signature.MAX_SKEW_MS` of the cluster's clock.
The :class:`~streamkernel.runtime.rest.job_signature.ReplayGuard` of one JobManager remembers
what it accepted in memory; a standby that takes over, or the same JobManager restarted, would
not. :class:`AcceptedRequestStore` keeps each accepted submission as an empty file named after
its timestamp and signature in a directory next to the secret that signs them: for a highly
available cluster ``<storageDir>/<cluster-id>/accepted-requests/``, which every JobManager of the
cluster reads and writes, as they share ``cluster.secret`` there. (A JobManager without high
availability has a secret of its own, new at every start: a request signed for an earlier one
fails its signature.)

A local directory records a request with ``O_CREAT | O_EXCL``: of two JobManagers (or two
threads) recording the same request, one wins. Another file system (fsspec) checks, then
writes; only the leading JobManager accepts submissions, so no second writer races it there.
Files older than the window are removed as new requests arrive (at most once a minute).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from typing import Optional

from streamkernel.errors import StreamKernelError
from streamkernel.runtime.checkpoint import filesystem as fs

__all__ = ["AcceptedRequestStore", "AcceptedRequestStoreError", "DIRECTORY_NAME"]

_LOG = logging.getLogger(__name__)

#: The directory's name next to the cluster's secret.
DIRECTORY_NAME = "accepted-requests"
_PURGE_EVERY_MS = 60_000


class AcceptedRequestStoreError(StreamKernelError):
    """An accepted request could not be recorded (the request is refused: it could be replayed)."""


class AcceptedRequestStore:
    """Signed requests accepted in the last ``window_ms``, as files in ``directory`` (see the module)."""

    def __init__(self, directory: str, window_ms: int) -> None:
        self.directory = directory
        self.window_ms = window_ms
        self._local = fs.is_local(directory)
        self._purged_at = 0
        self._lock = threading.Lock()

    @staticmethod
    def _name(signature: str, timestamp_ms: int) -> str:
        return f"{timestamp_ms:015d}-{hashlib.sha256(signature.encode('utf-8', 'replace')).hexdigest()[:40]}"

    def record(self, signature: str, timestamp_ms: int, now_ms: int) -> bool:
        """Record a verified request; False if it was recorded before (a replay). Raises
        :class:`AcceptedRequestStoreError` naming the directory when it cannot be written."""
        self._purge(now_ms)
        path = fs.join(self.directory, self._name(signature, timestamp_ms))
        try:
            if self._local:
                local = fs.normalize(path)
                os.makedirs(os.path.dirname(local), mode=0o700, exist_ok=True)
                try:
                    fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
                except FileExistsError:
                    return False
                os.close(fd)
                return True
            if fs.exists(path):
                return False
            fs.makedirs(self.directory)
            fs.write_bytes(path, b"")
            return True
        except OSError as error:
            raise AcceptedRequestStoreError(
                f"cannot record the accepted request in '{self.directory}' ({type(error).__name__}: "
                f"{error.strerror or error}); the request is refused, as it could be replayed") from None

    def contains(self, signature: str, timestamp_ms: int) -> bool:
        """Whether this request was recorded (a read: a store that cannot be read says no)."""
        try:
            return fs.exists(fs.join(self.directory, self._name(signature, timestamp_ms)))
        except OSError:
            return False

    def _purge(self, now_ms: int) -> None:
        with self._lock:
            if now_ms - self._purged_at < _PURGE_EVERY_MS:
                return
            self._purged_at = now_ms
        try:
            names = fs.listdir(self.directory)
        except OSError:
            return
        for name in names:
            stamp = name.split("-", 1)[0]
            if stamp.isascii() and stamp.isdigit() and now_ms - int(stamp) > self.window_ms:
                try:
                    fs.remove(fs.join(self.directory, name))
                except OSError as error:  # another JobManager purged it first, or the disk went away
                    _LOG.debug("could not remove the expired accepted request %s: %s", name, error)

    def __repr__(self) -> str:
        return f"AcceptedRequestStore({self.directory!r})"


def store_next_to(secret_directory: Optional[str], window_ms: int) -> Optional[AcceptedRequestStore]:
    """The store of a cluster whose secret lives in ``secret_directory`` (None: none, memory only)."""
    if not secret_directory:
        return None
    return AcceptedRequestStore(fs.join(secret_directory, DIRECTORY_NAME), window_ms)
