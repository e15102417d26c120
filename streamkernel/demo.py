"""The demo behind ``make demo``: a word count built with the DataStream API.

It builds the dataflow, writes its StreamGraph, JobGraph and ExecutionGraph as SVG files,
describes each in the terminal (what chained, how many slots, with and without slot
sharing), then runs the job on a local cluster and prints its results and metrics.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from streamkernel.common.typeinfo import Types
from streamkernel.datastream import StreamExecutionEnvironment

if TYPE_CHECKING:
    from streamkernel.graph.execution_graph import ExecutionGraph
    from streamkernel.graph.job_graph import JobGraph
    from streamkernel.graph.stream_graph import StreamGraph

__all__ = ["LINES", "build_word_count", "run_demo"]

LINES = [
    "to be or not to be",
    "that is the question",
    "whether tis nobler in the mind to suffer",
    "the slings and arrows of outrageous fortune",
]


def build_word_count(env: StreamExecutionEnvironment) -> Any:
    """Source -> FlatMap -> Filter -> KeyBy -> Reduce -> Sink: the classic word count."""
    return (
        env.from_collection(LINES, type_info=Types.STRING())
        .flat_map(lambda line: [(word, 1) for word in line.split()],
                  output_type=Types.TUPLE([Types.STRING(), Types.INT()])).name("Split")
        .filter(lambda pair: len(pair[0]) > 1).name("Drop short words")
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1])).name("Count")
        .print()
    )


def _section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 60 - len(title)))


def run_demo(out_dir: str = "out/demo", parallelism: int = 2) -> int:
    """Build, draw and run the word count; returns an exit status."""
    from streamkernel.viz.display import dot_available, render, save_svg
    from streamkernel.viz.text import to_text

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    build_word_count(env)
    execution_graph = env.get_execution_graph(taskmanagers=2, slots_per_taskmanager=parallelism,
                                              job_name="word count")
    graphs: dict[str, StreamGraph | JobGraph | ExecutionGraph] = {
        "stream_graph": env.get_stream_graph("word count"),
        "job_graph": env.get_job_graph("word count"),
        "execution_graph": execution_graph,
    }
    os.makedirs(out_dir, exist_ok=True)
    for name, graph in graphs.items():
        _section(name.replace("_", " ").title())
        print(to_text(render(graph)))
        if dot_available():
            path = os.path.join(out_dir, f"{name}.svg")
            save_svg(graph, path)
            print(f"-> {path}")
    if not dot_available():
        print("\n(graphviz 'dot' not found: graphs shown as text only; see README to install it)")
    _section("Slots")
    no_sharing = env.get_execution_graph(taskmanagers=1, slots_per_taskmanager=None, slot_sharing=False,
                                         job_name="word count")
    print(f"with slot sharing: {execution_graph.slots_needed} slots; "
          f"without: {no_sharing.slots_needed} slots")
    _section("Execution plan JSON (Flink's plan visualizer format)")
    print(env.get_execution_plan())
    return _run_on_cluster(parallelism)


def _run_on_cluster(parallelism: int) -> int:
    """Run the word count on a local cluster of 2 TaskManagers; print results and metrics."""
    import pandas as pd

    from streamkernel.runtime.core.metrics import metric_rows
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    _section("Run on a local cluster (2 TaskManagers x %d slots)" % parallelism)
    with MiniCluster(taskmanagers=2, slots_per_taskmanager=parallelism) as cluster:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(parallelism)
        build_word_count(env)
        result = env.execute("word count")
        print(f"\nfinished in {result.get_net_runtime()} ms")
        _section("Metrics per subtask")
        columns = ["vertex", "subtask", "state", "records_in", "records_out", "busy", "backpressured"]
        with pd.option_context("display.width", 160, "display.max_colwidth", 48):
            print(pd.DataFrame(metric_rows(cluster.inspection.snapshot()))[columns].to_string(index=False))
    return 0
