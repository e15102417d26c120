"""The task mailbox: actions put by other threads run in order on the task thread between
batches; once the task ended, pending and later actions are dropped."""

from __future__ import annotations

import threading

import pytest

from streamkernel.common import WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.datagen import DataGeneratorSource
from streamkernel.runtime.core.deployment import ExecutionState
from streamkernel.runtime.minicluster.minicluster import MiniCluster
from streamkernel.runtime.tasks.mailbox import TaskMailbox
from streamkernel.runtime.tasks.task import Task
from streamkernel.testing import wait_until


def test_actions_run_in_the_order_they_were_put_including_those_put_while_running() -> None:
    wakeups: list[int] = []
    mailbox = TaskMailbox(lambda: wakeups.append(len(mailbox.queue)))
    ran: list[str] = []
    putter = threading.Thread(target=lambda: [mailbox.put(lambda i=i: ran.append(f"a{i}")) for i in range(3)])
    putter.start()
    putter.join()
    mailbox.put(lambda: (ran.append("b"), mailbox.put(lambda: ran.append("c"))))
    assert wakeups == [1, 2, 3, 4]  # every put wakes the task thread, after the action is queued
    mailbox.run_all()
    assert ran == ["a0", "a1", "a2", "b", "c"]
    assert not mailbox.queue


def test_a_failing_action_propagates_and_leaves_the_later_ones_queued() -> None:
    mailbox = TaskMailbox(lambda: None)
    ran: list[int] = []

    def fail() -> None:
        raise ValueError("injected")

    mailbox.put(lambda: ran.append(1))
    mailbox.put(fail)
    mailbox.put(lambda: ran.append(3))
    with pytest.raises(ValueError, match="injected"):
        mailbox.run_all()
    assert ran == [1] and len(mailbox.queue) == 1


def test_a_closed_mailbox_drops_pending_and_later_actions_without_waking_anyone() -> None:
    wakeups: list[None] = []
    mailbox = TaskMailbox(lambda: wakeups.append(None))
    ran: list[str] = []
    assert mailbox.put(lambda: ran.append("pending")) is True
    mailbox.close()
    assert mailbox.is_closed and not mailbox.queue
    assert mailbox.put(lambda: ran.append("late")) is False
    mailbox.run_all()
    assert ran == [] and len(wakeups) == 1


def test_running_tasks_run_posted_actions_on_their_own_thread_and_drop_them_once_ended() -> None:
    tasks: list[Task] = []
    ran: list[tuple[str, int, str]] = []
    lock = threading.Lock()

    def factory(tdd, services, on_state_change):
        task = Task(tdd, services, on_state_change)
        tasks.append(task)
        return task

    def record(task: Task, index: int) -> None:
        with lock:
            ran.append((task.tdd.name_with_subtask, index, threading.current_thread().name))

    with MiniCluster(taskmanagers=1, slots_per_taskmanager=1, task_factory=factory):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        # A slow unbounded source: the source task sleeps on its source, the keyed task on its gate.
        (env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=50.0),
                         WatermarkStrategy.no_watermarks(), "gen")
            .key_by(lambda x: x % 2).reduce(lambda a, b: a + b).add_sink(lambda v: None))
        client = env.execute_async("mailbox")
        wait_until(lambda: len(tasks) == 2 and all(t.state == ExecutionState.RUNNING for t in tasks),
                   message=f"both tasks of the job to be RUNNING (have {tasks})")
        assert {bool(t.tdd.inputs) for t in tasks} == {False, True}  # a source task and an input task
        for task in tasks:
            for index in range(3):
                assert task.invokable.mailbox.put(lambda task=task, index=index: record(task, index))
        wait_until(lambda: len(ran) == 6, message=f"6 actions to run in the tasks' threads (ran {ran})")
        for task in tasks:
            name = task.tdd.name_with_subtask
            assert [(i, thread) for n, i, thread in ran if n == name] == [(0, name), (1, name), (2, name)]
        client.cancel().result(timeout=60)
        wait_until(lambda: all(t.state == ExecutionState.CANCELED for t in tasks),
                   message=f"both tasks to be CANCELED (have {tasks})")
        for task in tasks:
            assert task.invokable.mailbox.is_closed
            assert task.invokable.mailbox.put(lambda task=task: record(task, 99)) is False
    assert len(ran) == 6
