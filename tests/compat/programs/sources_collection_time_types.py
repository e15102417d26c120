"""from_collection with Types.SQL_DATE, SQL_TIME and BIG_DEC: the collected Python values (datetime.date, datetime.time, Decimal) and what print() writes (Java's toString)."""
import datetime
import sys
from decimal import Decimal

from streamkernel.common import Types
from streamkernel.datastream import StreamExecutionEnvironment

CASES = [
    ("SQL_DATE", [datetime.date(2024, 1, 2), datetime.date(1999, 12, 31)], Types.SQL_DATE()),
    ("SQL_TIME", [datetime.time(12, 34, 56), datetime.time(0, 0, 1)], Types.SQL_TIME()),
    ("BIG_DEC", [Decimal("1.50"), Decimal("-3"), Decimal("12345678901234567890.123")], Types.BIG_DEC()),
]


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    for name, values, type_info in CASES:
        stream = env.from_collection(values, type_info=type_info)
        collected = list(stream.execute_and_collect())
        print(name, "collected:", collected, [type(v).__name__ for v in collected])
        print(f"--- {name} printed ---")
        sys.stdout.flush()
        stream.print()
        env.execute(name)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
