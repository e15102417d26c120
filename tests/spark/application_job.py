"""A job script for the application-mode tests: a bounded word count written to a FileSink.

``application_job.py OUT [count|fail|forever]``: counts ``WORDS`` (each word's final count, one
line ``word count`` per word) into part files under OUT; then ``fail`` runs a second job whose
map raises on ``w3``, and ``forever`` a second, unbounded job (200 records/s) that ends only
when the driver is stopped. Nothing in it
knows about Spark: ``get_execution_environment()`` picks up the application's cluster.
Not a test module: the tests run it through ``streamkernel run --target spark-application``.
"""

import sys

from streamkernel.common import Types, WatermarkStrategy
from streamkernel.common.serialization import Encoder
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors import DataGeneratorSource
from streamkernel.datastream.connectors.file_system import FileSink

WORDS = [f"w{i % 5}" for i in range(100)]


def reject_w3(word):
    if word == "w3":
        raise ValueError(f"the application refuses {word}")
    return word


def count(env: StreamExecutionEnvironment, out: str) -> None:
    """The word count, into part files under ``out``."""
    total = WORDS.count("w0")
    counts = (env.from_collection(WORDS, Types.STRING())
              .map(lambda w: (w, 1), Types.TUPLE([Types.STRING(), Types.INT()]))
              .key_by(lambda pair: pair[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
              .filter(lambda pair: pair[1] == total)
              .map(lambda pair: f"{pair[0]} {pair[1]}", Types.STRING()))
    counts.sink_to(FileSink.for_row_format(out, Encoder.simple_string_encoder()).build())
    env.execute("application word count")
    print(f"word count done, parallelism {env.get_parallelism()}", flush=True)


def main(out: str, mode: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    count(env, out)
    if mode == "fail":
        env.from_collection(WORDS, Types.STRING()).map(reject_w3, Types.STRING()).print()
        env.execute("application failing")
    elif mode == "forever":
        env.from_source(DataGeneratorSource(lambda i: i, None, 200), WatermarkStrategy.no_watermarks(), "forever") \
            .filter(lambda n: n < 0).print()
        env.execute("application forever")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "count")
