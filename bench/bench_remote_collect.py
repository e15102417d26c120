"""How fast do results stream back to a remote client? (issue 17)

Run: ``.venv/bin/python bench/bench_remote_collect.py [--backend local|process] [--records N] [--repeat R]``

One cluster in this process (``--backend``, 1 TaskManager, 2 slots, REST on a free port, its
secret under a temporary STREAMKERNEL_HOME). ``N`` records ``(i, str(i))`` at parallelism 1 are
read with ``sum(1 for _ in env.execute_and_collect())``, alternately as a remote client
(``execution.target: remote``: the results wait on the JobManager and are fetched with
``POST /jobs/:jobid/coordinators/:operatorid``) and locally from the same cluster (the
collect buffer in this process), ``R`` times each; the median records/s of each are printed.
Timed from ``execute_and_collect()`` to the last record read (submission included).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="process", choices=("local", "process"))
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ["STREAMKERNEL_HOME"] = tempfile.mkdtemp(prefix="bench-remote-collect-")
    from streamkernel.common.configuration import Configuration
    from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    rates: dict[str, list[float]] = {"remote": [], "local": []}
    with MiniCluster(1, 2, backend=args.backend, rest=True, configuration={"rest.port": "0"}).start() as cluster:
        assert cluster.rest_url is not None
        host, _, port = cluster.rest_url[len("http://"):].rpartition(":")
        for _ in range(args.repeat):
            for target in ("remote", "local"):
                conf = Configuration()
                if target == "remote":
                    for key, value in {"execution.target": "remote", "rest.address": host, "rest.port": port}.items():
                        conf.set_string(key, value)
                env = StreamExecutionEnvironment.get_execution_environment(conf)
                env.set_parallelism(1)
                start = time.perf_counter()
                read = sum(1 for _ in env.from_collection(list(range(args.records)))
                           .map(lambda x: (x, str(x))).execute_and_collect())
                assert read == args.records, (target, read)
                rates[target].append(read / (time.perf_counter() - start))
    for target, values in rates.items():
        print(f"{args.backend} backend, {target} client: median {statistics.median(values):,.0f} records/s "
              f"({', '.join(f'{v:,.0f}' for v in values)})")


if __name__ == "__main__":
    main()
