"""BroadcastProcessFunction and KeyedBroadcastProcessFunction contexts: timestamp(), current_watermark(), current_processing_time(), timer_service(), get_current_key(), the broadcast state (writable on the broadcast side, read-only in process_element) and side outputs yielded as (OutputTag, value)."""
from streamkernel.common import Types, WatermarkStrategy
from streamkernel.common.watermark_strategy import TimestampAssigner
from streamkernel.datastream import OutputTag, StreamExecutionEnvironment
from streamkernel.datastream.functions import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from streamkernel.datastream.state import MapStateDescriptor

ORDERS = [("k1", 1), ("k2", 2), ("k1", 3), ("k2", 4)]
RULES = [("a", 10), ("b", 20), ("a", 25), ("c", 30)]
RULE_STATE = MapStateDescriptor("rules", Types.STRING(), Types.INT())
NOTES = OutputTag("notes", Types.STRING())
JOBS = ["plain", "plain with timestamps", "keyed with timestamps"]


def describe(state):
    """The broadcast state as one deterministic text (items, keys and values sorted)."""
    return (f"items={sorted(state.items())} keys={sorted(state.keys())} values={sorted(state.values())} "
            f"a={state.get('a')} has_a={state.contains('a')} missing={state.get('zz')} empty={state.is_empty()}")


def try_put(state):
    try:
        state.put("x", 1)
        return "accepted"
    except Exception as error:  # PyFlink's read-only state has no put
        return type(error).__name__


def times(ctx):
    ts, wm, now = ctx.timestamp(), ctx.current_watermark(), ctx.current_processing_time()
    service = ctx.timer_service()
    return (f"ts={ts} wm={wm} wm_before_ts={wm < ts} now_ok={isinstance(now, int) and now > 0} "
            f"service_wm_same={service.current_watermark() == wm}")


class Probe(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        state = ctx.get_broadcast_state(RULE_STATE)
        yield f"element {value} {times(ctx)} {describe(state)} put={try_put(state)}"
        yield NOTES, f"element {value}"

    def process_broadcast_element(self, value, ctx):
        state = ctx.get_broadcast_state(RULE_STATE)
        state.put(value[0], value[1])
        yield f"rule {value} {times(ctx)} {describe(state)}"
        yield NOTES, f"rule {value}"


class KeyedProbe(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        state = ctx.get_broadcast_state(RULE_STATE)
        yield f"element {value} key={ctx.get_current_key()} {times(ctx)} {describe(state)} put={try_put(state)}"
        yield NOTES, f"element {value}"

    def process_broadcast_element(self, value, ctx):
        state = ctx.get_broadcast_state(RULE_STATE)
        state.put(value[0], value[1])
        yield f"rule {value} {times(ctx)} {describe(state)}"
        yield NOTES, f"rule {value}"


class SecondsField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1] * 1000


def main():
    for job in JOBS:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        row = Types.TUPLE([Types.STRING(), Types.INT()])
        orders = env.from_collection(ORDERS, type_info=row)
        rules = env.from_collection(RULES, type_info=row)
        if job.endswith("with timestamps"):
            strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondsField())
            orders = orders.assign_timestamps_and_watermarks(strategy)
            rules = rules.assign_timestamps_and_watermarks(strategy)
        if job.startswith("keyed"):
            out = orders.key_by(lambda o: o[0]).connect(rules.broadcast(RULE_STATE)).process(
                KeyedProbe(), output_type=Types.STRING())
        else:
            out = orders.connect(rules.broadcast(RULE_STATE)).process(Probe(), output_type=Types.STRING())
        out.map(lambda line: "main " + line, output_type=Types.STRING()).print()
        out.get_side_output(NOTES).map(lambda line: "side " + line, output_type=Types.STRING()).print()
        print(f"### {job}", flush=True)
        env.execute(job)


if __name__ == "__main__":
    main()
