"""The standalone cluster directory's process numbering and locks (streamkernel.runtime.entrypoint.cluster_dir,
.directory_lock)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from streamkernel.runtime.entrypoint.cluster_dir import ClusterDir, process_alive
from streamkernel.runtime.entrypoint.directory_lock import FileLock, LockError


def test_a_taskmanager_just_spawned_keeps_its_number_before_it_shows_our_entry_point(tmp_path) -> None:
    """`cluster start` spawns its TaskManagers one after the other; a child that has not exec'd our
    entry point yet (a loaded machine) must not see its number given to the next one."""
    directory = ClusterDir(str(tmp_path / "cluster"))
    directory.prepare()
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert not process_alive(child.pid)  # not (yet) one of our entry points
        directory.write_pid("taskexecutor", 0, child.pid)
        assert directory.next_index("taskexecutor") == 1
    finally:
        child.stdin.close()
        child.wait(30)
    assert directory.next_index("taskexecutor") == 0  # an ended process frees its number


def test_a_directory_lock_handed_to_a_spawned_process_is_held_until_that_process_ends(tmp_path) -> None:
    """What `cluster start` does with the JobManager lock: the process it spawns keeps it, and nobody
    holds it once that process is gone (a dead JobManager never blocks the next start)."""
    path = tmp_path / "standalonesession.lock"
    lock = FileLock(path)
    assert lock.try_acquire()
    assert lock.fd is not None
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                             pass_fds=(lock.fd,))
    lock.release()
    try:
        assert not FileLock(path).try_acquire()  # the child holds it now
    finally:
        child.stdin.close()
        child.wait(30)
    after = FileLock(path)
    assert after.try_acquire()
    after.release()


def test_a_lock_file_that_is_a_symbolic_link_is_refused(tmp_path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    (tmp_path / "x.lock").symlink_to(target)
    with pytest.raises(LockError, match=r"cannot open the lock file '.*x\.lock': it is a symbolic link"):
        FileLock(tmp_path / "x.lock").try_acquire()
