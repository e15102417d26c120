"""from_collection without and with each kind of type_info (basic types, ROW, ROW_NAMED, TUPLE, arrays, MAP), printed and collected with their Python types, and a FileSource of text lines over a directory of files at parallelism 1."""
import os
import sys
import tempfile

from streamkernel.common import Row, Types, WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.file_system import FileSource, StreamFormat

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)

CASES = [
    ("untyped", [1, "two", (3, 4.5), None, [5]], None),
    ("INT", [1, -2, 3], Types.INT()),
    ("LONG", [2 ** 40, 0], Types.LONG()),
    ("STRING", ["a", "", "ü"], Types.STRING()),
    ("DOUBLE", [1.5, -0.25, 3.0], Types.DOUBLE()),
    ("FLOAT", [1.5, -0.25], Types.FLOAT()),
    ("BOOLEAN", [True, False], Types.BOOLEAN()),
    ("SHORT", [7, -7], Types.SHORT()),
    ("BYTE", [1, -1], Types.BYTE()),
    ("ROW", [Row(1, "x"), Row(2, "y")], Types.ROW([Types.INT(), Types.STRING()])),
    ("ROW_NAMED", [Row(id=1, name="x")], Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])),
    ("TUPLE", [(1, "x"), (2, "y")], Types.TUPLE([Types.INT(), Types.STRING()])),
    ("BASIC_ARRAY", [[1, 2], [3]], Types.BASIC_ARRAY(Types.INT())),
    ("PRIMITIVE_ARRAY", [[1, 2]], Types.PRIMITIVE_ARRAY(Types.INT())),
    ("MAP", [{"a": 1}], Types.MAP(Types.STRING(), Types.INT())),
]

for name, values, type_info in CASES:
    if type_info is None:
        stream = env.from_collection(values)
    else:
        stream = env.from_collection(values, type_info=type_info)
    collected = list(stream.execute_and_collect())
    print(name, "collected:", collected, [type(v).__name__ for v in collected])
    if name.endswith("ARRAY"):  # PyFlink prints Java arrays by identity: [Ljava.lang.Integer;@1be98d65
        continue
    print(f"--- {name} printed ---")
    sys.stdout.flush()
    stream.print()
    env.execute(name)
    sys.stdout.flush()

with tempfile.TemporaryDirectory() as directory:
    for file_name, lines in (("a.txt", ["a1", "a2"]), ("b.txt", ["b1"]), ("c.txt", ["c1", "c2", "c3"])):
        with open(os.path.join(directory, file_name), "w") as f:
            f.write("\n".join(lines) + "\n")
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), directory).build()
    lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
    collected = list(lines.map(lambda line: line.upper(), output_type=Types.STRING()).execute_and_collect())
    print("files:", sorted(collected), [type(v).__name__ for v in collected][:1])
    runs = [line[0] for i, line in enumerate(collected) if i == 0 or line[0] != collected[i - 1][0]]
    within = all([x for x in collected if x[0] == f] == sorted(x for x in collected if x[0] == f) for f in runs)
    # the order of the files is not defined (Flink assigns the file splits in no fixed order)
    print("files: one after another:", len(runs) == len(set(runs)), "lines in order:", within)
