"""The %flink / %%flink magics, driven through a real IPython InteractiveShell."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from streamkernel.graph.execution_graph import ExecutionGraph
from streamkernel.graph.job_graph import JobGraph
from streamkernel.graph.stream_graph import StreamGraph
from streamkernel.jupyter import magics as magics_module


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[InteractiveShell, list[Any]]]:
    ip = InteractiveShell.instance()
    ip.run_cell("from streamkernel.common import WatermarkStrategy\n"
                "from streamkernel.datastream.connectors.number_seq import NumberSequenceSource")
    shown: list[Any] = []
    monkeypatch.setattr(magics_module, "display", lambda obj: shown.append(obj))
    ip.run_line_magic("load_ext", "streamkernel")
    ip.run_line_magic("flink", "reset")
    yield ip, shown
    ip.run_line_magic("flink", "reset")


def _cell(ip: InteractiveShell, line: str, body: str) -> Any:
    return ip.run_cell_magic("flink", line, body)


def test_cells_add_to_one_dataflow_and_highlight_what_is_new(shell) -> None:
    ip, shown = shell
    _cell(ip, "", "words = env.from_collection(['a b', 'c'])")
    first = shown[-1]
    assert isinstance(first.graph, StreamGraph)
    assert [n.name for n in first.graph.nodes] == ["Source: Collection Source"]
    assert first.highlight == {first.graph.nodes[0].id}

    _cell(ip, "", "counts = words.flat_map(lambda l: l.split()).map(lambda w: (w, 1))")
    second = shown[-1]
    names = [n.name for n in second.graph.nodes]
    assert names == ["Source: Collection Source", "FlatMap", "Map"]
    new_ids = {n.id for n in second.graph.nodes if n.name in ("FlatMap", "Map")}
    assert second.highlight == new_ids


def test_reset_starts_a_new_dataflow(shell) -> None:
    ip, shown = shell
    _cell(ip, "", "env.from_collection([1, 2]).map(lambda x: x)")
    old_env = ip.user_ns["env"]
    _cell(ip, "--reset --name fresh", "env.from_collection([3])")
    assert ip.user_ns["env"] is not old_env
    graph = shown[-1].graph
    assert graph.job_name == "fresh"
    assert len(graph.nodes) == 1


def test_parallelism_option_applies_to_the_cells_operators_only(shell) -> None:
    ip, shown = shell
    ip.user_ns["env"].set_parallelism(1)
    _cell(ip, "--parallelism 3", "s = env.from_source(NumberSequenceSource(1, 10), WatermarkStrategy.no_watermarks(), 'seq')\n"
                                 "m = s.map(lambda x: x)")
    graph = shown[-1].graph
    assert {n.name: n.parallelism for n in graph.nodes} == {"Source: seq": 3, "Map": 3}
    assert ip.user_ns["env"].get_parallelism() == 1


def test_show_option_selects_the_graph(shell) -> None:
    ip, shown = shell
    _cell(ip, "--show job", "env.from_collection([1]).map(lambda x: x).filter(bool)")
    assert isinstance(shown[-1].graph, JobGraph)
    _cell(ip, "--show execution --taskmanagers 2 --slots 1", "pass")
    assert isinstance(shown[-1].graph, ExecutionGraph)
    count = len(shown)
    _cell(ip, "--show none", "x = 1")
    assert len(shown) == count


def test_line_show_each_graph_and_the_plan(shell) -> None:
    ip, shown = shell
    _cell(ip, "--show none", "env.from_collection([1]).key_by(lambda x: x).map(lambda x: x)")
    ip.run_line_magic("flink", "show stream")
    assert isinstance(shown[-1].graph, StreamGraph)
    ip.run_line_magic("flink", "show job")
    assert isinstance(shown[-1].graph, JobGraph)
    ip.run_line_magic("flink", "show execution")
    assert isinstance(shown[-1].graph, ExecutionGraph)
    ip.run_line_magic("flink", "show plan")
    plan = json.loads(shown[-1].plan_json)  # as PyFlink's: key_by runs the key selector in an operator first
    assert [p["ship_strategy"] for node in plan["nodes"] for p in node.get("predecessors", [])] == ["FORWARD", "HASH"]


@pytest.mark.parametrize("line, fragment", [
    ("bogus", "choose from 'show'"),
    ("show stram", "choose from 'stream', 'job', 'execution', 'plan'"),
    ("show stream --colour", "unrecognized arguments: --colour"),
])
def test_wrong_subcommand_or_option_is_a_one_line_usage_error(shell, line: str, fragment: str) -> None:
    ip, _ = shell
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("flink", line)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_wrong_cell_option_is_a_usage_error(shell) -> None:
    ip, _ = shell
    with pytest.raises(UsageError, match="choose from 'stream', 'job', 'execution', 'none'"):
        _cell(ip, "--show everything", "x = 1")


def test_too_small_cluster_is_a_usage_error_naming_the_shortfall(shell) -> None:
    ip, _ = shell
    _cell(ip, "--show none --parallelism 4", "env.from_source(NumberSequenceSource(1, 9), "
                                              "WatermarkStrategy.no_watermarks(), 'seq').map(lambda x: x)")
    with pytest.raises(UsageError, match="short"):
        ip.run_line_magic("flink", "show execution --taskmanagers 1 --slots 2")


def test_user_error_points_at_the_users_line(shell, capsys: pytest.CaptureFixture[str]) -> None:
    ip, shown = shell
    count = len(shown)
    result = ip.run_cell("%%flink\nok = 1\nraise ValueError('bad input in my cell')\n")
    assert isinstance(result.error_in_exec, ValueError)
    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "bad input in my cell" in out
    assert "raise ValueError('bad input in my cell')" in out  # the user's own line is shown
    assert "run_cell_code" not in out and "_cell(" not in out  # the magic's internals are hidden
    assert len(shown) == count  # no graph after a failed cell


def test_help_lists_every_subcommand(shell, capsys: pytest.CaptureFixture[str]) -> None:
    ip, _ = shell
    ip.run_line_magic("flink", "help")
    out = capsys.readouterr().out
    from streamkernel.jupyter.commands import line_parser

    subcommands = [a for a in line_parser()._actions if hasattr(a, "choices") and isinstance(a.choices, dict)]
    names = list(subcommands[0].choices)
    assert {"start", "slots", "dashboard", "peek", "state", "results", "kill-taskmanager"} <= set(names)
    for name in names:
        assert f"  %flink {name}" in out  # each subcommand with its own usage and options
    for word in ("--parallelism", "--show", "--seconds", "--key", "--live"):
        assert word in out
    # %flink? shows the same: the magic's docstring ends with it
    doc = ip.find_line_magic("flink").__doc__
    assert all(f"  %flink {name}" in doc for name in names)


def test_rebinding_env_in_a_cell_adopts_the_new_environment(shell) -> None:
    ip, shown = shell
    _cell(ip, "", "from streamkernel.datastream import StreamExecutionEnvironment\n"
                  "env = StreamExecutionEnvironment.get_execution_environment()\n"
                  "env.from_collection([1, 2]).map(lambda x: x * 2)")
    assert [n.name for n in shown[-1].graph.nodes] == ["Source: Collection Source", "Map"]
