"""Async I/O with asyncio: AsyncDataStream.ordered_wait keeps input order while later records finish first, unordered_wait with capacity=1, a timeout() override for slow records, several results per record, an empty result, and an exception raised in async_invoke failing the job."""
import asyncio

from streamkernel.common import Time, Types
from streamkernel.datastream import AsyncDataStream, StreamExecutionEnvironment
from streamkernel.datastream.functions import AsyncFunction

DELAYS = [0.2, 0.15, 0.1, 0.05, 0.0]


class SlowLookup(AsyncFunction):
    """Looks a record up after a delay that shrinks along the input."""

    async def async_invoke(self, value):
        await asyncio.sleep(DELAYS[value % len(DELAYS)])
        if value == 7:
            return []
        if value == 8:
            return [f"{value}a", f"{value}b"]
        return [f"looked up {value}"]


class MaybeTooSlow(AsyncFunction):
    """Record 2 takes far longer than the timeout; timeout() answers for it."""

    async def async_invoke(self, value):
        await asyncio.sleep(30 if value == 2 else 0)
        return [f"fast {value}"]

    def timeout(self, value):
        return [f"timed out {value}"]


class Broken(AsyncFunction):
    """Raises for record 3."""

    async def async_invoke(self, value):
        if value == 3:
            raise ValueError("lookup of 3 failed")
        return [value]


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    numbers = env.from_collection(list(range(10)), type_info=Types.INT())
    ordered = AsyncDataStream.ordered_wait(numbers, SlowLookup(), Time.seconds(20), capacity=10,
                                           output_type=Types.STRING())
    print("ordered:", list(ordered.execute_and_collect()))
    one_at_a_time = AsyncDataStream.unordered_wait(numbers, SlowLookup(), Time.seconds(20), capacity=1,
                                                   output_type=Types.STRING())
    print("unordered, capacity 1:", list(one_at_a_time.execute_and_collect()))
    unordered = AsyncDataStream.unordered_wait(numbers, SlowLookup(), Time.seconds(20), output_type=Types.STRING())
    print("unordered, sorted:", sorted(unordered.execute_and_collect()))
    timeouts = AsyncDataStream.ordered_wait(env.from_collection([1, 2, 3], type_info=Types.INT()), MaybeTooSlow(),
                                            Time.milliseconds(500), output_type=Types.STRING())
    print("timeouts:", list(timeouts.execute_and_collect()))
    try:
        list(AsyncDataStream.ordered_wait(numbers, Broken(), Time.seconds(20), output_type=Types.INT())
             .execute_and_collect())
        print("exception: job finished")
    except Exception as error:  # PyFlink raises Py4JJavaError, naming the Python exception
        print("exception: job failed;", "lookup of 3 failed" in str(error))


if __name__ == "__main__":
    main()
