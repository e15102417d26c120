"""Rolling keyed aggregations, one job each: sum on untyped tuples, min and max_by by field name on Types.ROW_NAMED, max on Types.TUPLE, min_by on untyped tuples (ties keep the first element)."""
from streamkernel.common import Types
from streamkernel.datastream import StreamExecutionEnvironment

# (symbol, venue, price, quantity)
TRADES = [("ACME", "x", 10, 5), ("BOLT", "y", 7, 1), ("ACME", "y", 8, 2), ("ACME", "z", 8, 9),
          ("BOLT", "x", 9, 4), ("ACME", "x", 12, 1), ("BOLT", "z", 7, 3)]

TRADE_ROW = Types.ROW_NAMED(["symbol", "venue", "price", "quantity"],
                            [Types.STRING(), Types.STRING(), Types.INT(), Types.INT()])
TRADE_TUPLE = Types.TUPLE([Types.STRING(), Types.STRING(), Types.INT(), Types.INT()])


def job(env, title, stream):
    print(f"* {title}")
    stream.print()
    env.execute(title)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    by_symbol = lambda trade: trade[0]  # noqa: E731

    untyped = env.from_collection(TRADES)
    job(env, "sum", untyped.key_by(by_symbol).sum(3))
    job(env, "min_by", untyped.key_by(by_symbol).min_by(2))

    rows = env.from_collection(TRADES, type_info=TRADE_ROW)
    job(env, "min", rows.key_by(by_symbol).min("price"))
    job(env, "max_by", rows.key_by(by_symbol).max_by("price"))

    tuples = env.from_collection(TRADES, type_info=TRADE_TUPLE)
    job(env, "max", tuples.key_by(by_symbol).max(2))


if __name__ == "__main__":
    main()
