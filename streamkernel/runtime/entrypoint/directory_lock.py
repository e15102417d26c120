"""Exclusive locks on a cluster directory's lock files (``fcntl.flock``).

Two uses (:mod:`.commands`):

* ``DIR/standalonesession.lock``: one JobManager per directory. The starting command takes it
  before it touches the directory (secret, pid file, ``jobmanager.json``) and hands it to the
  JobManager process it spawns, which holds it for its lifetime; a second ``cluster start`` or
  ``jobmanager start`` in the directory finds it taken and is refused;
* ``DIR/taskexecutor.lock``: held while a ``taskmanager start`` picks its number N, spawns the
  process and writes ``taskexecutor-N.pid``, so two at once never take the same N.

Rationale: an flock belongs to an open file description, not to a path or a process. The kernel
drops it when the last descriptor of that description closes, so the lock of a process that
died (SIGKILL, a crash) never blocks the next start (the file stays, unlocked), and a descriptor
inherited by a spawned process (``pass_fds``) carries the lock over to it with no moment in
which nobody holds it. Two descriptors opened separately conflict even within one process.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path
from typing import Optional

__all__ = ["FileLock", "LockError"]

_POLL_S = 0.05


class LockError(OSError):
    """A lock file that cannot be opened or locked at all (not merely taken by another process)."""


class FileLock:
    """An exclusive ``flock`` on ``path`` (created mode 0600 if missing; a symbolic link is refused).

    >>> import tempfile
    >>> lock = FileLock(Path(tempfile.mkdtemp()) / "x.lock")
    >>> lock.try_acquire(), FileLock(lock.path).try_acquire()
    (True, False)
    >>> lock.release()
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        #: The descriptor holding the lock (None: not held); not inherited by spawned processes unless passed.
        self.fd: Optional[int] = None

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it; False (at once) when another descriptor does."""
        if self.fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as error:
            what = "it is a symbolic link (remove it)" if error.errno == errno.ELOOP else error.strerror
            raise LockError(f"cannot open the lock file '{self.path}': {what}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False
            raise LockError(f"cannot lock '{self.path}': {error.strerror}") from None
        self.fd = fd
        return True

    def acquire(self, timeout: float) -> None:
        """Take the lock, waiting at most ``timeout`` seconds for its holder to release it
        (TimeoutError naming the file after that)."""
        deadline = time.monotonic() + timeout
        while not self.try_acquire():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the lock '{self.path}' was held by another process for more than {timeout:.0f} s")
            time.sleep(_POLL_S)

    def release(self) -> None:
        """Close this descriptor: the lock is released unless a process it was handed to still holds it."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)

    def __repr__(self) -> str:
        return f"FileLock({str(self.path)!r}, held={self.fd is not None})"
