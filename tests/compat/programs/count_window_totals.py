"""Tumbling count windows per key (key_by(key_type=...).count_window(n)) with a WindowFunction's apply(key, window, inputs), a Types.TUPLE result, printed or written with --output (FileSink); modelled on PyFlink's tumbling_count_window example."""
import argparse
import sys
from typing import Iterable

from streamkernel.common import Encoder, Types
from streamkernel.datastream import StreamExecutionEnvironment, WindowFunction
from streamkernel.datastream.connectors import FileSink, OutputFileConfig, RollingPolicy
from streamkernel.datastream.window import CountWindow

BATCH = 4

# (product, quantity); a product's trailing partial batch is never reported
SALES = [("tea", 2), ("jam", 1), ("tea", 5), ("tea", 1), ("jam", 3), ("tea", 4), ("jam", 2),
         ("tea", 3), ("jam", 6), ("jam", 1), ("tea", 2), ("tea", 7), ("jam", 4), ("tea", 1)]


class BatchTotal(WindowFunction[tuple, tuple, str, CountWindow]):
    def apply(self, key: str, window: CountWindow, inputs: Iterable[tuple]):
        quantities = [quantity for _, quantity in inputs]
        return [(key, sum(quantities), max(quantities))]


if __name__ == "__main__":
    cli = argparse.ArgumentParser()
    cli.add_argument("--output", dest="output", required=False)
    output_path = cli.parse_known_args(sys.argv[1:])[0].output

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    totals = env.from_collection(SALES, type_info=Types.TUPLE([Types.STRING(), Types.INT()])) \
        .key_by(lambda sale: sale[0], key_type=Types.STRING()) \
        .count_window(BATCH) \
        .apply(BatchTotal(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT()]))

    if output_path is None:
        totals.print()
    else:
        totals.sink_to(
            sink=FileSink.for_row_format(base_path=output_path, encoder=Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder().with_part_prefix("batch").with_part_suffix(".txt").build())
            .with_rolling_policy(RollingPolicy.default_rolling_policy())
            .build())
    env.execute("count-window-totals")
