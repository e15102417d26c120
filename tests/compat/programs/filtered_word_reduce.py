"""Lambdas with declared output types: flat_map(output_type=Types.STRING()), filter, map(output_type=Types.TUPLE([STRING, INT])), key_by + reduce at parallelism 1, printed as Java tuples; modelled on a public PyFlink word-count app."""
from streamkernel.common import Types
from streamkernel.datastream import StreamExecutionEnvironment

STOP_WORDS = {"a", "an", "the", "of", "and", "to", "is"}

NOTES = [
    "The state of a stream is the sum of its past",
    "A window is a bounded view of an unbounded stream",
    "Keys, windows and timers: the stream engine's toolbox",
]


def normalise(line):
    return line.lower().replace(",", " ").replace(":", " ").split()


def run():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)

    counts = env.from_collection(NOTES) \
        .flat_map(normalise, output_type=Types.STRING()) \
        .filter(lambda word: word not in STOP_WORDS) \
        .map(lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()])) \
        .key_by(lambda pair: pair[0]) \
        .reduce(lambda seen, new: (seen[0], seen[1] + new[1]))

    counts.print()
    env.execute("filtered-word-reduce")


if __name__ == "__main__":
    run()
