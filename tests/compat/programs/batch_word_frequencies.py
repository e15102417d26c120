"""Word count in BATCH mode over built-in lines or an --input text file (FileSource), printed or written with --output (FileSink with part prefix/suffix and the default rolling policy); modelled on PyFlink's word_count example."""
import argparse
import sys

from streamkernel.common import Encoder, Types, WatermarkStrategy
from streamkernel.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from streamkernel.datastream.connectors.file_system import (FileSink, FileSource, OutputFileConfig,
                                                            RollingPolicy, StreamFormat)

SAMPLE_LINES = [
    "the river runs to the sea and the sea runs back as rain",
    "a stone in the river, a cloud over the sea",
    "River stones are smooth; sea stones are smoother still",
    "rain falls, the river rises, and the sea takes it all",
    "the sky keeps the rain until the river asks for it",
    "no river is ever the same river twice",
]


def tokens(line):
    for token in line.split():
        yield token


def open_input(env, input_path):
    if input_path is None:
        print("No --input given: counting the built-in sample lines.")
        return env.from_collection(SAMPLE_LINES)
    file_source = FileSource \
        .for_record_stream_format(StreamFormat.text_line_format(), input_path) \
        .process_static_file_set() \
        .build()
    return env.from_source(source=file_source,
                           watermark_strategy=WatermarkStrategy.for_monotonous_timestamps(),
                           source_name="text-lines")


def part_file_sink(output_path):
    naming = OutputFileConfig.builder() \
        .with_part_prefix("words") \
        .with_part_suffix(".txt") \
        .build()
    return FileSink.for_row_format(base_path=output_path, encoder=Encoder.simple_string_encoder()) \
        .with_output_file_config(naming) \
        .with_rolling_policy(RollingPolicy.default_rolling_policy()) \
        .build()


def run(input_path, output_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)

    counts = open_input(env, input_path) \
        .flat_map(tokens) \
        .map(lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()])) \
        .key_by(lambda pair: pair[0]) \
        .reduce(lambda left, right: (left[0], left[1] + right[1]))

    if output_path is None:
        print("No --output given: printing the counts.")
        counts.print()
    else:
        counts.sink_to(sink=part_file_sink(output_path))

    env.execute("batch-word-frequencies")


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description="Count the words of some text.")
    cli.add_argument("--input", dest="input", required=False, help="a text file to read")
    cli.add_argument("--output", dest="output", required=False, help="a directory for the part files")
    options, _unknown = cli.parse_known_args(sys.argv[1:])
    run(options.input, options.output)
