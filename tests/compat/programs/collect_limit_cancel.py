"""execute_and_collect on an endless NumberSequenceSource (env.from_source): limit=N returns a list of the first N records and cancels the job, a `with` block left early cancels it too, and the environment runs further jobs afterwards."""
from streamkernel.common import Types, WatermarkStrategy
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.connectors.number_seq import NumberSequenceSource

END = 10**12  # never reached: only cancelling the job ends it
LIMIT = 5
TAKEN = 4
AFTERWARDS = ["a", "b", "c"]


def endless(env):
    return env.from_source(NumberSequenceSource(0, END), WatermarkStrategy.no_watermarks(), "numbers")


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    first = endless(env).map(lambda n: n * 2, output_type=Types.LONG()).execute_and_collect(limit=LIMIT)
    print("limit:", isinstance(first, list), first)

    taken = []
    with endless(env).filter(lambda n: n % 3 == 0).execute_and_collect() as results:
        print("iterator:", type(results).__name__)
        for n in results:
            taken.append(n)
            if len(taken) == TAKEN:
                break
    print("with:", taken)

    print("more than there are:", env.from_collection(AFTERWARDS).execute_and_collect(limit=10))
    with env.from_collection(AFTERWARDS).map(str.upper).execute_and_collect() as results:
        print("to the end:", list(results))
        try:
            next(results)
        except StopIteration:
            print("then StopIteration")


if __name__ == "__main__":
    main()
