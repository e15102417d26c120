"""The cockpit's widgets on a real local cluster, and the subcommands that show them, through IPython.

The shell is IPython's InteractiveShell (no frontend), told that widgets can show, so the
subcommands build the same widgets a notebook gets; what the tests read is what the
widgets hold (their HTML parts), as a person would see it. The refresher runs for real.
"""

from __future__ import annotations

import re
import threading


from streamkernel.jupyter.widgets.cockpit import ClusterView, JobDashboard
from streamkernel.jupyter.widgets.refresher import refresher_for
from streamkernel.testing import wait_until

LIVE_COCKPIT = True  # the conftest's shell gives live widgets, as under a notebook frontend
SETUP = ("from streamkernel.common import WatermarkStrategy\n"
         "from streamkernel.datastream.connectors.datagen import DataGeneratorSource\n"
         "from streamkernel.datastream.connectors.number_seq import NumberSequenceSource\n")

UNBOUNDED = ("ds = env.from_source(DataGeneratorSource(lambda i: ('k%d' % (i % 5), 1), count=None, "
             "rate_limiter_strategy=1000.0), WatermarkStrategy.no_watermarks(), 'gen')\n"
             "ds.key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1])).uid('counts').name('Counts')"
             ".execute_and_collect")


def _occupied(view: ClusterView) -> int:
    return view.fallback_html().count("sk-slot sk-slot-occupied")


def test_start_shows_the_cluster_view_which_follows_jobs_and_ends_with_the_cluster(shell) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 2 --slots 2")
    view = shown[-1]
    assert isinstance(view, ClusterView)
    assert view.fallback_html().count('class="sk-taskmanager"') == 2 and _occupied(view) == 0
    assert view.fallback_html().count("sk-slot sk-slot-free") == 4
    ip.run_cell_magic("flink", "--show none --parallelism 2 --submit --name live",
                      "env.from_source(DataGeneratorSource(lambda i: i, count=None, rate_limiter_strategy=500.0), "
                      "WatermarkStrategy.no_watermarks(), 'gen').map(lambda x: x).add_sink(lambda v: None)")
    wait_until(lambda: _occupied(view) == 2, message="two occupied slots in the live view")
    chain = "Source: gen -&gt; Map -&gt; Sink: Unnamed"  # one chained task per slot
    assert re.findall(r'class="sk-chip"[^>]*>([^<]+)<', view.fallback_html()) == [f"{chain} (1/2)", f"{chain} (2/2)"]
    refresher = refresher_for(ip.user_ns["cluster"])
    assert refresher.running
    ip.run_line_magic("flink", "stop")
    assert view.done and "The cluster is stopped." in view.fallback_html()
    wait_until(lambda: not refresher.running, message="the refresher thread to end")
    assert not [t for t in threading.enumerate() if t.name == "streamkernel-cockpit-refresher"]


def test_a_submitted_job_gets_a_dashboard_whose_buttons_checkpoint_and_whose_results_are_live(shell) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 2")
    ip.run_cell("env.get_config()")  # nothing submitted: no dashboard
    assert len(shown) == 1
    ip.run_cell("from streamkernel.datastream.connectors.collect import CollectSink\n"
                "env.set_parallelism(1)\n"
                "env.enable_checkpointing(60_000)\n"
                "sink = CollectSink()\n"
                + UNBOUNDED.replace("ds.key_by", "counts = ds.key_by").replace(".execute_and_collect", "") + "\n"
                "counts.sink_to(sink)\n"
                "client = env.execute_async('dashboarded')")
    dashboard = shown[-1]
    assert isinstance(dashboard, JobDashboard)  # shown after the cell, by the post_run_cell hook
    assert dashboard.parts == ("header", "graph", "vertices", "subtasks", "checkpoints", "results")
    wait_until(lambda: 'data-status="RUNNING"' in dashboard.fallback_html(), message="RUNNING in the header")
    assert dashboard.fallback_html().count('class="sk-subtask-row"') == 2
    assert "sk-checkpoint-row" not in dashboard.fallback_html()
    assert 'data-total="0"' in dashboard.fallback_html()  # exactly-once collect: nothing before a checkpoint
    dashboard._in_background(dashboard.trigger_checkpoint).join(30)  # what the Trigger checkpoint button runs
    assert "Checkpoint completed" in dashboard.message.value
    wait_until(lambda: int(re.search(r'data-total="(\d+)"', dashboard.fallback_html()).group(1)) > 0,
               message="the committed results in the live table")
    assert re.search(r"<td>k\d</td>", dashboard.fallback_html())
    assert re.findall(r'data-checkpoint="(\d+)" data-status="(\w+)"', dashboard.fallback_html()) == [("1", "COMPLETED")]
    assert [v for _, v in dashboard.restore_choice.options] and dashboard.taskmanager_choice.options == ("taskmanager-1",)
    # Restore from selected: the job is cancelled and restarted from the checkpoint; the dashboard follows
    old = dashboard.job_id
    dashboard.restore_choice.value = dashboard.restore_choice.options[0][1]
    dashboard._in_background(dashboard.restore_selected).join(30)
    assert "restored from" in dashboard.message.value and dashboard.job_id != old
    cluster = ip.user_ns["cluster"]
    wait_until(lambda: cluster.get_job(dashboard.job_id).get_job_details().checkpoints.latest_restored is not None,
               message="the new job restored the checkpoint")
    dashboard._in_background(dashboard.cancel).join(30)
    wait_until(lambda: dashboard.done, message="the dashboard to end with its job")
    assert 'data-status="CANCELED"' in dashboard.fallback_html()
    assert all(b.disabled for name, b in dashboard.buttons.items() if name in ("checkpoint", "savepoint", "stop", "cancel"))


def test_a_button_error_is_shown_in_the_panel_not_raised(shell) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 1")
    ip.run_cell_magic("flink", "--show none --submit --name short",
                      "env.from_source(NumberSequenceSource(1, 10), WatermarkStrategy.no_watermarks(), 'n')"
                      ".add_sink(lambda v: None)")
    dashboard = shown[-1]
    dashboard._in_background(dashboard.restore_selected).join(10)  # nothing selected
    assert "ValueError: choose a completed checkpoint or savepoint first" in dashboard.message.value


def test_parts_alone_and_the_text_fallback_in_a_terminal(shell, capsys) -> None:
    ip, shown = shell
    ip.run_line_magic("flink", "start --taskmanagers 1 --slots 2")
    ip.run_cell_magic("flink", "--show none --parallelism 1", UNBOUNDED.replace(".execute_and_collect", ".add_sink(lambda v: None)"))
    ip.run_line_magic("flink", "submit --name parts")
    ip.run_line_magic("flink", "metrics --live")
    assert shown[-1].parts == ("header", "vertices", "subtasks")
    ip.run_line_magic("flink", "checkpoints parts")
    assert shown[-1].parts == ("header", "checkpoints")
    ip.run_line_magic("flink", "results")
    assert shown[-1].parts == ("results",) and "No collect or pandas sink" in shown[-1].fallback_html()
    ip.run_line_magic("flink", "slots")
    assert isinstance(shown[-1], ClusterView)
    magics = ip.magics_manager.registry["FlinkMagics"]
    magics.cockpit._live = lambda: False  # a terminal: text, printed once
    capsys.readouterr()
    ip.run_line_magic("flink", "slots")
    assert "TM1 taskmanager-1 (local" in capsys.readouterr().out
    ip.run_line_magic("flink", "dashboard parts")
    out = capsys.readouterr().out
    assert out.startswith("parts (") and "Counts" in out


def test_the_refresher_survives_a_cluster_it_cannot_read_for_a_while() -> None:
    """A connected cluster's JobManager taking over (no leader for a moment): snapshots fail, the
    refresher thread goes on, and the views are refreshed again once the cluster answers."""
    from streamkernel.jupyter.widgets.refresher import Refresher

    class Flaky:
        failing = True

        class inspection:  # noqa: N801 - the cluster's attribute
            @staticmethod
            def snapshot() -> dict:
                if Flaky.failing:
                    raise ConnectionError("no JobManager leads")
                return {"jobs": [], "taskmanagers": []}

    class View:
        done = False
        refreshed = 0

        def refresh(self, snapshot: dict, history: object) -> None:
            View.refreshed += 1

    cluster = Flaky()
    refresher = Refresher(cluster, interval_s=0.01)
    Flaky.failing = False
    refresher.add(View())
    Flaky.failing = True
    wait_until(lambda: refresher.failed_refreshes >= 3, message="failed refreshes")
    assert refresher.running
    seen = View.refreshed
    Flaky.failing = False
    wait_until(lambda: View.refreshed > seen, message="the view refreshed again")
    refresher.stop()
