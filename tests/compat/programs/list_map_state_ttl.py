"""ListState and MapState in a KeyedProcessFunction, both with a StateTtlConfig (update type, visibility) attached by enable_time_to_live; the TTL is an hour, so nothing expires during the run."""
from streamkernel.common import Time, Types
from streamkernel.datastream import StreamExecutionEnvironment
from streamkernel.datastream.functions import KeyedProcessFunction, RuntimeContext
from streamkernel.datastream.state import ListStateDescriptor, MapStateDescriptor, StateTtlConfig

KEEP_LAST = 3

# (user, category, amount)
PURCHASES = [("uma", "books", 12), ("vic", "games", 60), ("uma", "food", 8), ("uma", "books", 20),
             ("vic", "books", 15), ("uma", "games", 45), ("vic", "games", 30), ("uma", "food", 5)]


def hour_long_ttl():
    return StateTtlConfig.new_builder(Time.hours(1)) \
        .set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite) \
        .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired) \
        .build()


class PurchaseProfile(KeyedProcessFunction):

    def open(self, runtime_context: RuntimeContext):
        recent = ListStateDescriptor("recent-amounts", Types.INT())
        recent.enable_time_to_live(hour_long_ttl())
        self.recent = runtime_context.get_list_state(recent)

        per_category = MapStateDescriptor("per-category", Types.STRING(), Types.INT())
        per_category.enable_time_to_live(hour_long_ttl())
        self.per_category = runtime_context.get_map_state(per_category)

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        _, category, amount = value
        self.recent.add(amount)
        amounts = list(self.recent.get())
        if len(amounts) > KEEP_LAST:
            amounts = amounts[-KEEP_LAST:]
            self.recent.update(amounts)

        count = self.per_category.get(category) if self.per_category.contains(category) else 0
        self.per_category.put(category, count + 1)

        yield ctx.get_current_key(), amounts, sorted((name, n) for name, n in self.per_category.items())


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(PURCHASES) \
        .key_by(lambda purchase: purchase[0]) \
        .process(PurchaseProfile()) \
        .print()
    env.execute("list-map-state-ttl")
