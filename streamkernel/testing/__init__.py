"""A public test kit: scripted sources, failure markers, a manual clock.

Use it to test your own streaming logic, and to watch recovery work: a
:class:`ScriptedSource` emits the records of a script in order, and markers in the script
control time and failures:

* :class:`Pause` ``(ms)`` — the source has nothing for ``ms`` milliseconds (watermarks and
  checkpoints happen meanwhile);
* :class:`Fail` ``(message, times=1)`` — the source raises the first ``times`` times it
  reaches this point (a task failure the job must recover from); after that it passes;
* :class:`Gate` — every source subtask holds here, idle, until the test calls
  :meth:`Gate.open` (the job keeps running and checkpointing meanwhile; it cannot finish);
  :class:`FileGate` does the same for subtasks in TaskManager processes (``process``, ``spark``);
* :class:`End` — the source ends here (records after it are ignored).

:func:`wait_until` waits for a condition the code exposes (a job's status, a Gate reached,
a count of results) with a deadline, and fails naming what it waited for: tests wait on
what they need instead of sleeping and hoping the machine was fast enough.

A Gate makes recovery tests deterministic: put one after the records that must flow
before a failure is injected, inject the failure (``MiniCluster.failures.fail_operator``,
``kill_taskmanager``, a savepoint), then open the gate. Without it a fast job may end
before the failure, and the test races the job::

    gate = Gate()
    source = ScriptedSource(words[:100] + [gate] + words[100:])
    ...  # submit, wait for the first results, kill a TaskManager
    gate.open()

The source is replayable: its position is the index in the script, so a job restored from
a checkpoint continues exactly after the last record the checkpoint covers. Records are
split between source subtasks round-robin (record *i* goes to subtask ``i % parallelism``).

>>> from streamkernel.testing import ScriptedSource, Fail
>>> source = ScriptedSource([1, 2, Fail("boom"), 3])
>>> source.records()
[1, 2, 3]
"""

from __future__ import annotations

from streamkernel.runtime.core.clock import ManualClock
from streamkernel.testing.markers import End, Fail, FileGate, Gate, InjectedFailure, Pause
from streamkernel.testing.scripted_source import GatedSource, ScriptedSource
from streamkernel.testing.waiting import DEFAULT_WAIT_TIMEOUT_SECONDS, wait_until
from streamkernel.testing.zookeeper import ZooKeeperServer

__all__ = ["ScriptedSource", "Pause", "Fail", "Gate", "FileGate", "End", "ManualClock", "InjectedFailure", "wait_until",
           "DEFAULT_WAIT_TIMEOUT_SECONDS", "GatedSource", "ZooKeeperServer"]
