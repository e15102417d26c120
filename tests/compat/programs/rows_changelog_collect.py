"""Row kinds through keyed reduce, untyped maps and execute_and_collect; Types.ROW fields holding None, floats, nested lists of Rows and maps; Row fields by name after a typed boundary."""
from streamkernel.common import Row, RowKind, Types
from streamkernel.datastream import StreamExecutionEnvironment

EVENTS = [("a", 1.5, None), ("b", 2.0, "x"), ("a", -0.25, "y"), ("c", 1e20, None)]
EVENT = Types.ROW_NAMED(["key", "amount", "note"], [Types.STRING(), Types.DOUBLE(), Types.STRING()])
NESTED = Types.ROW_NAMED(["key", "parts", "index"],
                         [Types.STRING(), Types.LIST(Types.ROW_NAMED(["n"], [Types.DOUBLE()])),
                          Types.MAP(Types.STRING(), Types.LIST(Types.INT()))])


def retract(acc, row):
    out = Row(key=row.key, amount=acc.amount + row.amount, note=row.note)
    out.set_row_kind(RowKind.UPDATE_AFTER)
    return out


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    events = env.from_collection([Row(*e) for e in EVENTS], type_info=EVENT)
    events.print()
    totals = events.key_by(lambda r: r.key).reduce(retract)
    totals.print()
    totals.map(lambda r: f"untyped {r.get_row_kind()} {r!r} {r.note is None}").print()
    events.map(lambda r: Row.of_kind(RowKind.DELETE, r.key, r.amount)) \
        .map(lambda r: f"pickled {r.get_row_kind()} {r}").print()
    events.map(lambda r: Row(key=r.key, parts=[Row(n=r.amount), Row(n=r.amount * 2)],
                             index={r.key: [1, 2]}), output_type=NESTED).print()
    env.execute("changelog")
    collected = events.map(lambda r: Row.of_kind(RowKind.UPDATE_BEFORE, r.key, r.amount),
                           output_type=Types.ROW([Types.STRING(), Types.DOUBLE()])).execute_and_collect()
    with collected:
        for row in collected:
            print("collected", row.get_row_kind(), repr(row), row[1])


if __name__ == "__main__":
    main()
