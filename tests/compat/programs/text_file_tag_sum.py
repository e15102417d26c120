"""read_text_file with lambdas only: flat_map, map, filter, key_by and a rolling sum(1), at parallelism 2, untyped records printed with Python's str(); modelled on a public word_count_lambda example."""
import sys

from streamkernel.datastream import StreamExecutionEnvironment

if __name__ == "__main__":
    tags_file = sys.argv[1] if len(sys.argv) > 1 else "tags.txt"

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)

    env.read_text_file(tags_file) \
        .flat_map(lambda line: line.split(";")) \
        .map(lambda tag: tag.strip().lower()) \
        .filter(lambda tag: len(tag) > 0) \
        .map(lambda tag: (tag, 1)) \
        .key_by(lambda pair: pair[0]) \
        .sum(1) \
        .print()

    env.execute("tag-counts")
