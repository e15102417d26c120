"""Rows in one job: Types.ROW/ROW_NAMED fields by name, attribute and index, as_dict, RowKind and set_row_kind printed as +I/-U/+U/-D, nested rows with lists and maps, map/flat_map/process producing Rows, key_by on a Row field, Row equality and hash, untyped (pickled) Rows printed with repr, project() on a TUPLE stream."""
from streamkernel.common import Row, RowKind, Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import FlatMapFunction, ProcessFunction

READINGS = [
    ("s1", "north", 12, ["a", "b"]),
    ("s2", "south", 7, []),
    ("s3", "north", 30, ["c"]),
    ("s4", "east", 5, ["d", "e", "f"]),
]

READING = Types.ROW_NAMED(["sensor", "zone", "value", "tags"],
                          [Types.STRING(), Types.STRING(), Types.INT(), Types.LIST(Types.STRING())])
NESTED = Types.ROW_NAMED(["id", "where", "extra", "counts"],
                         [Types.STRING(), Types.ROW([Types.STRING(), Types.INT()]),
                          Types.ROW_NAMED(["low", "high"], [Types.INT(), Types.INT()]),
                          Types.MAP(Types.STRING(), Types.INT())])
KIND = Types.ROW([Types.STRING(), Types.INT()])
SHORT = Row("sensor", "value")  # a row class
KINDS = [RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE]


class Explode(FlatMapFunction):
    def flat_map(self, value):
        for position, tag in enumerate(value.tags):
            yield Row(value.sensor, position, tag)


class Changelog(ProcessFunction):
    def process_element(self, value, ctx):
        row = Row(value["sensor"], value[2])
        row.set_row_kind(KINDS[value.value % 4])
        yield row
        yield Row.of_kind(RowKind.UPDATE_AFTER, value.zone, -value.value)


def describe(row):
    access = (row.sensor, row["zone"], row[2], row[-1], row[1:3], "zone" in row, "nope" in row, len(row))
    return f"access {access} dict={row.as_dict()}"


def nested(row):
    return Row(id=row.sensor, where=Row(row.zone, row.value), extra=Row(low=row.value - 1, high=row.value + 1),
               counts={t: len(t) for t in row.tags[:1]})


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    readings = env.from_collection(READINGS, type_info=READING)

    readings.map(describe).print()
    readings.map(lambda r: f"untyped {r!r}").print()
    readings.map(lambda r: Row(r.sensor, r.value)).print()
    readings.map(lambda r: f"class {SHORT(r.sensor, r.value)!r} {SHORT(r.sensor)!r} {SHORT!r}").print()
    readings.map(lambda r: Row(sensor=r.sensor, tags=r.tags)).print()
    readings.print()

    nest = readings.map(nested, output_type=NESTED)
    nest.print()
    nest.map(lambda r: f"nested {r.where!r} {r.extra!r} {r.where[0]} {r.extra.high} "
                       f"{r.as_dict(True)} {r.counts}").print()

    readings.flat_map(Explode(), output_type=Types.ROW([Types.STRING(), Types.INT(), Types.STRING()])).print()
    kinds = readings.process(Changelog(), output_type=KIND)
    kinds.print()
    kinds.map(lambda r: f"kind {r.get_row_kind()} {r.get_row_kind().name} {r!r}").print()

    readings.map(lambda r: Row(r.zone, r.value), output_type=KIND) \
        .key_by(lambda r: r[0]) \
        .reduce(lambda a, b: Row(a[0], a[1] + b[1])) \
        .print()

    readings.map(lambda r: f"equal {Row(a=1, b=r.value) == Row(b=r.value, a=1)} {Row(1, 2) == Row(1, 2)} "
                           f"{Row(1, 2) == (1, 2)} {Row(a=1) == Row(1)} {hash(Row(r.value, 2)) == hash((r.value, 2))} "
                           f"{Row.of_kind(RowKind.DELETE, 1) == Row(1)} {len({Row(1), Row(1), Row(2)})}").print()

    pairs = env.from_collection([(r[0], r[1], r[2]) for r in READINGS],
                                type_info=Types.TUPLE([Types.STRING(), Types.STRING(), Types.INT()]))
    pairs.project(2, 0).print()
    pairs.project(1).map(lambda t: f"projected {t!r}").print()
    env.execute("rows")


if __name__ == "__main__":
    main()
