"""Async I/O with retries: AsyncFunction with async def, AsyncDataStream.ordered_wait_with_retry / unordered_wait_with_retry / ordered_wait, async_retry_strategies (FixedDelayRetryStrategy, ExponentialBackoffDelayRetryStrategy, NO_RETRY_STRATEGY), async_retry_predicates, retries on results and on exceptions, exhausted retries, the timeout() fallback and no timeout (0)."""
import asyncio
import functools

from streamkernel.common import Time, Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream import async_retry_predicates
from streamkernel.datastream.async_data_stream import AsyncDataStream
from streamkernel.datastream.async_retry_strategies import (
    NO_RETRY_STRATEGY,
    ExponentialBackoffDelayRetryStrategy,
    FixedDelayRetryStrategy,
)
from streamkernel.datastream.functions import AsyncFunction, AsyncRetryStrategy

VALUES = list(range(1, 11))
ALWAYS_RETRIED = 7  # its results always ask for a retry
HANGING = 99  # its call never completes
BACKOFF_CALLS = (1, 2, 3, 4, 5, 6, 7, 2, 1, 2)
LONG = Time.seconds(60)  # never reached by the jobs that do not hang


class Flaky(AsyncFunction):
    """Multiples of 4 raise ValueError twice, values = 1 (mod 4) first return no results."""

    def open(self, runtime_context):
        self.attempts = {}

    async def async_invoke(self, value):
        n = self.attempts[value] = self.attempts.get(value, 0) + 1
        await asyncio.sleep(0.001 * (10 - value % 10))
        if value == HANGING:
            await asyncio.Event().wait()
        if value % 4 == 0 and n <= 2:
            raise ValueError(f"boom {value}")
        if value % 4 == 1 and n <= 1:
            return []
        if value == ALWAYS_RETRIED:
            return [f"retry {value} attempt {n}"]
        return [f"{value} attempt {n}", f"{value} second"]

    def timeout(self, value):
        return [f"timeout {value} after {self.attempts.get(value)} attempts"]


def needs_retry(results):
    return len(results) == 0 or results[0].startswith("retry")


def run(job, build, values=VALUES, ordered=True):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    out = build(env.from_collection(values, type_info=Types.INT()))
    print(f"### {job}")
    try:
        results = list(out.execute_and_collect(job))
    except Exception as error:  # the job failed
        print(f"failed: ValueError boom reported={'boom' in str(error)}")
        return
    for line in results if ordered else sorted(results):
        print(line)


def strategies():
    print("### strategies")
    expo = ExponentialBackoffDelayRetryStrategy(5, 3, 40, 1.5, None, None)
    print("backoff", [expo.get_backoff_time_millis(n) for n in BACKOFF_CALLS])
    print("can retry", [expo.can_retry(n) for n in range(7)])
    fixed = AsyncRetryStrategy.fixed_delay(2, 7, async_retry_predicates.empty_result_predicate, None)
    print("fixed", type(fixed).__name__, [fixed.get_backoff_time_millis(n) for n in (1, 2, 3)],
          [fixed.can_retry(n) for n in range(4)])
    print("no retry", AsyncRetryStrategy.no_restart() is NO_RETRY_STRATEGY, NO_RETRY_STRATEGY.can_retry(1),
          NO_RETRY_STRATEGY.get_backoff_time_millis(1), NO_RETRY_STRATEGY.get_retry_predicate().result_predicate())
    for args in [(0, 1, None, None), (1, 0, None, None)]:
        try:
            FixedDelayRetryStrategy(*args)
            print("accepted", args)
        except Exception:
            print("rejected", args)


def main():
    strategies()
    on_value_error = functools.partial(async_retry_predicates.exception_type_predicate,
                                       expected_error_type=ValueError)
    fixed = FixedDelayRetryStrategy(3, 5, needs_retry, on_value_error)
    run("ordered fixed delay",
        lambda ds: AsyncDataStream.ordered_wait_with_retry(ds, Flaky(), LONG, fixed, output_type=Types.STRING()))
    expo = ExponentialBackoffDelayRetryStrategy(3, 5, 20, 2.0, needs_retry, async_retry_predicates.has_exception_predicate)
    run("unordered exponential backoff",
        lambda ds: AsyncDataStream.unordered_wait_with_retry(ds, Flaky(), LONG, expo, output_type=Types.STRING()),
        ordered=False)
    once = FixedDelayRetryStrategy(1, 5, needs_retry, async_retry_predicates.has_exception_predicate)
    run("retries exhausted",
        lambda ds: AsyncDataStream.ordered_wait_with_retry(ds, Flaky(), LONG, once, output_type=Types.STRING()))
    results_only = FixedDelayRetryStrategy(3, 5, needs_retry, None)
    run("exceptions not retried",
        lambda ds: AsyncDataStream.unordered_wait_with_retry(ds, Flaky(), LONG, results_only,
                                                             output_type=Types.STRING()))
    run("timeout fallback",
        lambda ds: AsyncDataStream.ordered_wait_with_retry(ds, Flaky(), Time.milliseconds(300), fixed,
                                                           output_type=Types.STRING()),
        values=[HANGING])
    run("no timeout without retries",
        lambda ds: AsyncDataStream.ordered_wait(ds, Flaky(), Time.seconds(0), output_type=Types.STRING()),
        values=[2, 3, 6])


if __name__ == "__main__":
    main()
