"""The standalone cluster directory's process numbering (streamkernel.runtime.entrypoint.cluster_dir)."""

from __future__ import annotations

import subprocess
import sys

from streamkernel.runtime.entrypoint.cluster_dir import ClusterDir, process_alive


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
