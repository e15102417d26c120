"""env.from_source(NumberSequenceSource) at parallelism 1 and 3: map, filter, key_by + reduce, execute_and_collect with and without limit, the Python types of collected values, and `with ... as it` iteration."""
from streamkernel.common import Row, Types, WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)


def numbers(first, last):
    return env.from_source(NumberSequenceSource(first, last), WatermarkStrategy.no_watermarks(), "numbers")


plain = list(numbers(1, 5).execute_and_collect())
print("plain:", plain, [type(n).__name__ for n in plain])
print("limit:", numbers(10, 20).execute_and_collect(limit=3))
print("limit beyond end:", numbers(1, 2).execute_and_collect(limit=5))
squares = numbers(1, 6).map(lambda n: n * n, output_type=Types.LONG()).filter(lambda n: n % 2 == 0)
print("squares:", list(squares.execute_and_collect()))
strings = numbers(1, 3).map(lambda n: f"#{n}", output_type=Types.STRING()).execute_and_collect(limit=3)
print("strings:", strings, [type(s).__name__ for s in strings])
pairs = numbers(1, 3).map(lambda n: (n, n / 2)).execute_and_collect(limit=3)
print("pickled tuples:", pairs, [type(p).__name__ for p in pairs])
rows = numbers(1, 2).map(lambda n: Row(str(n), n), output_type=Types.ROW([Types.STRING(), Types.LONG()]))
collected_rows = rows.execute_and_collect(limit=2)
print("rows:", collected_rows, [type(r).__name__ for r in collected_rows])
tuples = numbers(1, 2).map(lambda n: (str(n), n), output_type=Types.TUPLE([Types.STRING(), Types.LONG()]))
collected_tuples = tuples.execute_and_collect(limit=2)
print("tuples:", collected_tuples, [type(t).__name__ for t in collected_tuples])
with numbers(0, 9).map(lambda n: n % 3).execute_and_collect() as it:
    print("with:", [n for n in it])
running = numbers(1, 8).map(lambda n: (n % 2, n), output_type=Types.TUPLE([Types.LONG(), Types.LONG()])) \
    .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
print("running sums:", list(running.execute_and_collect()))
try:
    numbers(5, 4)
    print("end below start: accepted")
except Exception:  # PyFlink: Py4JJavaError wrapping IllegalArgumentException
    print("end below start: rejected")

env.set_parallelism(3)
parallel = sorted(numbers(1, 100).filter(lambda n: n % 7 == 0).execute_and_collect())
print("parallel multiples of 7:", parallel)
totals = numbers(1, 30).map(lambda n: (n % 3, n), output_type=Types.TUPLE([Types.LONG(), Types.LONG()])) \
    .key_by(lambda p: p[0]).reduce(lambda a, b: (a[0], a[1] + b[1]))
finals = {}
for key, total in totals.execute_and_collect():
    finals[key] = max(finals.get(key, 0), total)
print("parallel totals:", sorted(finals.items()))
print("parallel limit count:", len(numbers(1, 1000).execute_and_collect(limit=7)))
