"""Values of declared types as PyFlink converts them: Types.FLOAT/DOUBLE/INT/... output_type of map and flat_map, ROW/TUPLE fields, print() of each, from_collection with a type_info, from_source's produced type (get_type), execute_and_collect of FLOAT."""

import datetime
import sys
from decimal import Decimal

from streamkernel.common import Row, Types, WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.file_system import FileSource, StreamFormat
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource

FLOATS = [1 / 3, 2 / 3, 1e10, 1e-5, 0.1, 100.0, 1.5, 3, 1234567.9, 0.001, 1e7, 123456789.0]
CASES = [
    ("BOOLEAN", Types.BOOLEAN(), [True, False]),
    ("BYTE", Types.BYTE(), [1, -128, 127]),
    ("SHORT", Types.SHORT(), [1000, -32768]),
    ("INT", Types.INT(), [1, 2147483647, -5]),
    ("LONG", Types.LONG(), [2 ** 40]),
    ("FLOAT", Types.FLOAT(), FLOATS),
    ("DOUBLE", Types.DOUBLE(), [1 / 3, 1e10, 1e-5, 2, 0.001, 1e7]),
    ("STRING", Types.STRING(), ["hi"]),
    ("BIG_DEC", Types.BIG_DEC(), [Decimal("1.50"), Decimal("1E+3")]),
    ("SQL_DATE", Types.SQL_DATE(), [datetime.date(2024, 1, 2)]),
    ("LIST_FLOAT", Types.LIST(Types.FLOAT()), [[1 / 3, 2.5]]),
    ("MAP", Types.MAP(Types.STRING(), Types.FLOAT()), [{"a": 1 / 3}]),
    ("ROW", Types.ROW([Types.STRING(), Types.FLOAT(), Types.BOOLEAN(), Types.INT(), Types.DOUBLE()]),
     [Row("a", 1 / 3, True, None, 1e10)]),
    ("ROWNAMED", Types.ROW_NAMED(["s", "f"], [Types.STRING(), Types.FLOAT()]), [Row(s="a", f=2 / 3)]),
    ("TUPLE", Types.TUPLE([Types.STRING(), Types.FLOAT(), Types.BOOLEAN(), Types.DOUBLE(), Types.BIG_DEC()]),
     [("a", 1 / 3, True, 1e10, Decimal("2.50"))]),
    ("PICKLED", Types.PICKLED_BYTE_ARRAY(), [{"x": 1 / 3}]),
]

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
lines = sys.argv[1]
with open(lines, "w") as f:
    f.write("a\nb\n")
seq = env.from_source(NumberSequenceSource(1, 3), WatermarkStrategy.no_watermarks(), "seq")
text = env.from_source(FileSource.for_record_stream_format(StreamFormat.text_line_format(), lines).build(),
                       WatermarkStrategy.no_watermarks(), "text")
print("TYPE seq", repr(seq.get_type()))
print("TYPE text", repr(text.get_type()))
print("TYPE untyped", repr(seq.map(lambda v: v).get_type()))

src = env.from_collection([0])
for name, type_info, values in CASES:
    typed = src.flat_map(lambda _, vs=values: vs, output_type=type_info)
    typed.print(name)
    typed.map(lambda v, n=name: "%s %r" % (n, v)).print("REPR")
collection = env.from_collection([1 / 3, 2 / 3], Types.FLOAT())
collection.print("COLLECTION")
collection.map(lambda v: "COLLECTION %r" % (v,)).print("REPR")
env.execute("typed values")
sys.stdout.flush()

collected = env.from_collection([0]).flat_map(lambda _: FLOATS, output_type=Types.FLOAT()).execute_and_collect()
print("COLLECTED", [(repr(v), type(v).__name__) for v in collected])
