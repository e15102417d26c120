// The job whose REST answers scripts/record_flink_rest_answers.py records from a real Flink 2.3
// session cluster: the shape of any streaming job. A rate-limited generator (parallelism 2,
// event time from the values) -> rebalance -> map -> keyBy -> a KeyedProcessFunction counting
// per key in ValueState with an event-time timer -> a discarding sink, checkpointing every
// 500 ms. tests/runtime/rest/test_flink_rest_fidelity.py runs the same shape on streamkernel.

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

public class RestShapeJob {

    /** Counts the records of each key in ValueState; an event-time timer a second later emits the count. */
    public static class CountPerKey extends KeyedProcessFunction<Long, Long, Long> {
        private transient ValueState<Long> count;

        @Override
        public void open(OpenContext context) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) throws Exception {
            Long seen = count.value();
            count.update(seen == null ? 1L : seen + 1);
            ctx.timerService().registerEventTimeTimer(ctx.timestamp() + 1000);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<Long> out) throws Exception {
            out.collect(count.value());
        }
    }

    public static void main(String[] args) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(500);
        DataGeneratorSource<Long> numbers = new DataGeneratorSource<>(
                (GeneratorFunction<Long, Long>) index -> index, Long.MAX_VALUE,
                RateLimiterStrategy.perSecond(200), Types.LONG);
        env.fromSource(numbers, WatermarkStrategy.<Long>forMonotonousTimestamps()
                        .withTimestampAssigner((value, previous) -> value), "numbers")
                .rebalance()
                .map(new MapFunction<Long, Long>() {
                    @Override
                    public Long map(Long value) {
                        return value + 1;
                    }
                }).name("plus one")
                .keyBy(new KeySelector<Long, Long>() {
                    @Override
                    public Long getKey(Long value) {
                        return value % 10;
                    }
                })
                .process(new CountPerKey()).name("count per key")
                .sinkTo(new DiscardingSink<>()).name("discard");
        env.execute("rest shape job");
    }
}
