"""Basic operations on a Types.ROW_NAMED stream: field access by name, map, filter, key_by + reduce, and maps to Types.ROW / Types.ROW_NAMED results, one job per step; modelled on PyFlink's basic_operations example."""
from streamkernel.common import Row, Types
from streamkernel.datastream import StreamExecutionEnvironment

ORDERS = [
    (101, "ana", "Lisbon", 40),
    (102, "ben", "Porto", 15),
    (103, "carla", "Lisbon", 22),
    (104, "dev", "Faro", 9),
    (105, "eli", "Porto", 31),
    (106, "fay", "Lisbon", 5),
]

ORDER_TYPE = Types.ROW_NAMED(["order_id", "customer", "city", "amount"],
                             [Types.INT(), Types.STRING(), Types.STRING(), Types.INT()])


def run_step(env, title, stream):
    print(f"== {title}")
    stream.print()
    env.execute(title)


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    orders = env.from_collection(ORDERS, type_info=ORDER_TYPE)

    # fields by name; no output type, so results are printed with Python's str()
    run_step(env, "labels", orders.map(lambda order: (order.order_id, order.customer.upper())))

    run_step(env, "large orders",
             orders.filter(lambda order: order.amount >= 20).map(lambda order: order.customer))

    run_step(env, "city totals",
             orders.map(lambda order: (order.city, order.amount))
                   .key_by(lambda pair: pair[0])
                   .reduce(lambda acc, pair: (acc[0], acc[1] + pair[1])))

    run_step(env, "cents rows",
             orders.map(lambda order: Row(order.city, order.amount * 100),
                        output_type=Types.ROW([Types.STRING(), Types.INT()])))

    per_customer = orders.map(lambda order: Row(customer=order.customer, total=order.amount + 1),
                              output_type=Types.ROW_NAMED(["customer", "total"],
                                                          [Types.STRING(), Types.INT()]))
    run_step(env, "named rows", per_customer)
    run_step(env, "named fields", per_customer.map(lambda row: f"{row.customer} owes {row.total}"))


if __name__ == "__main__":
    main()
