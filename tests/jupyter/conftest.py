"""The notebook layer's fixture: an IPython shell with the extension loaded, as a notebook has."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell

from streamkernel.jupyter import magics as magics_module


@pytest.fixture
def shell(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
          tmp_path: Any) -> Iterator[tuple[InteractiveShell, list[Any]]]:
    """``(ip, shown)``: IPython after ``%load_ext streamkernel``, the test module's ``SETUP``
    code (if any) and ``%flink reset``; ``shown`` collects what the magics display.

    The shell works in ``tmp_path`` (default checkpoint and savepoint directories stay out of
    the repository). A module with ``LIVE_COCKPIT = True`` gets live widgets, as under a
    notebook frontend. Afterwards the ``gates`` a test left in the namespace are opened and
    the current cluster is stopped.
    """
    monkeypatch.chdir(tmp_path)
    ip = InteractiveShell.instance()
    shown: list[Any] = []
    monkeypatch.setattr(magics_module, "display", shown.append)
    ip.run_line_magic("load_ext", "streamkernel")
    if getattr(request.module, "LIVE_COCKPIT", False):
        monkeypatch.setattr(ip.magics_manager.registry["FlinkMagics"].cockpit, "_live", lambda: True)
    ip.run_cell(getattr(request.module, "SETUP", ""))
    ip.run_line_magic("flink", "reset")
    yield ip, shown
    from streamkernel.runtime.minicluster.minicluster import current_cluster

    for gate in ip.user_ns.get("gates", ()):
        gate.open()
    cluster = current_cluster()
    if cluster is not None and cluster.is_running:
        cluster.stop()
