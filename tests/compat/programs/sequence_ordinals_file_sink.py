"""NumberSequenceSource via from_source(type_info=Types.LONG()), a map to Types.ROW, a keyed MapFunction with ValueState typed Types.TUPLE, written by a FileSink (OutputFileConfig) to the directory given as first argument; modelled on the state_access_demo of Flink's "Intro to the Python DataStream API"."""
import sys

from streamkernel.common import Row, WatermarkStrategy
from streamkernel.common.serialization import Encoder
from streamkernel.common.typeinfo import Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.file_system import FileSink, OutputFileConfig
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource
from streamkernel.datastream.functions import MapFunction, RuntimeContext
from streamkernel.datastream.state import ValueStateDescriptor

LAST_NUMBER = 1000
BUCKETS = 5


class Ordinal(MapFunction):
    """Numbers each element of a bucket: 1 for its first element, 2 for the next..."""

    def open(self, runtime_context: RuntimeContext):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.PICKLED_BYTE_ARRAY()))

    def map(self, value):
        seen = (self.seen.value() or 0) + 1
        self.seen.update(seen)
        return value[0], seen


def main(output_dir):
    env = StreamExecutionEnvironment.get_execution_environment()
    numbers = env.from_source(source=NumberSequenceSource(1, LAST_NUMBER),
                              watermark_strategy=WatermarkStrategy.for_monotonous_timestamps(),
                              source_name="numbers",
                              type_info=Types.LONG())

    ordinals = numbers \
        .map(lambda n: Row(n % BUCKETS, n), output_type=Types.ROW([Types.LONG(), Types.LONG()])) \
        .key_by(lambda row: row[0]) \
        .map(Ordinal(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))

    naming = OutputFileConfig.builder().with_part_prefix("ordinals").with_part_suffix(".out").build()
    ordinals.sink_to(FileSink.for_row_format(output_dir, Encoder.simple_string_encoder())
                     .with_output_file_config(naming)
                     .build())
    env.execute("sequence-ordinals")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: sequence_ordinals_file_sink.py OUTPUT_DIR")
    main(sys.argv[1])
