"""FileSink.for_row_format with Encoder.simple_string_encoder() at parallelism 2 (default DateTimeBucketAssigner, OutputFileConfig prefix/suffix, BucketAssigner.base_path_bucket_assigner, RollingPolicy.default_rolling_policy(part_size) and on_checkpoint_rolling_policy, with and without enable_checkpointing), then FileSource.for_record_stream_format(StreamFormat.text_line_format(), ...) reading the part files back, skipping hidden files and directories."""
import os
import sys

from streamkernel.common import Encoder, Types, WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.file_system import (BucketAssigner, FileSink, FileSource, OutputFileConfig,
                                                       RollingPolicy, StreamFormat)

RECORDS = [f"rec-{i:02d}" for i in range(30)]  # 7 bytes a line
PART_SIZE = 21  # a part file rolls before a record once it holds more than 21 bytes: 4 lines
EXTRA_FILES = {"a.txt": "a1\na2\n", ".hidden": "h\n", "_underscore": "u\n", "sub/deep/z.txt": "z1\r\nz2",
               "sub/_dir/x": "x\n", "sub/.dir/y": "y\n", "sub/b": "b\n"}


def row_sink(path, rolling_policy=None, output_file_config=None, base_path_buckets=True):
    builder = FileSink.for_row_format(path, Encoder.simple_string_encoder())
    if base_path_buckets:
        builder = builder.with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
    if rolling_policy is not None:
        builder = builder.with_rolling_policy(rolling_policy)
    if output_file_config is not None:
        builder = builder.with_output_file_config(output_file_config)
    return builder.build()


def write(sinks, checkpoint_interval_ms=None):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    if checkpoint_interval_ms is not None:
        env.enable_checkpointing(checkpoint_interval_ms)
    ds = env.from_collection(RECORDS, type_info=Types.STRING())
    for sink in sinks:
        ds.sink_to(sink)
    env.execute("write part files")


def list_files(base):
    for root, _dirs, files in sorted(os.walk(base)):
        for name in sorted(files):
            path = os.path.join(root, name)
            with open(path) as f:
                print("FILE", os.path.relpath(path, base), ",".join(f.read().splitlines()))


if __name__ == "__main__":
    out = sys.argv[1]
    dated, named, checkpointed, on_checkpoint, extra = (os.path.join(out, d) for d in
                                                        ("dated", "named", "checkpointed", "on_checkpoint", "extra"))
    write([row_sink(dated, base_path_buckets=False),
           row_sink(named, RollingPolicy.default_rolling_policy(part_size=PART_SIZE),
                    OutputFileConfig.builder().with_part_prefix("out").with_part_suffix(".txt").build())])
    write([row_sink(checkpointed), row_sink(on_checkpoint, RollingPolicy.on_checkpoint_rolling_policy())],
          checkpoint_interval_ms=60 * 60 * 1000)
    for directory in (dated, named, checkpointed, on_checkpoint):
        print("DIR", os.path.basename(directory))
        list_files(directory)
    for rel, text in EXTRA_FILES.items():
        path = os.path.join(extra, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", newline="") as f:
            f.write(text)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), dated, named, extra, os.path.join(extra, ".hidden"),
        os.path.join(extra, "sub", "_dir")).build()
    print("DIR read")
    for line in env.from_source(source, WatermarkStrategy.no_watermarks(), "part files").execute_and_collect():
        print("READ", line)
