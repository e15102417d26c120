"""Window assigners and triggers with bad arguments: per case, the built-in classes of the error and its first line (or ok)."""
from streamkernel.common import Time
from streamkernel.datastream.window import (ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger,
                                            CountSlidingWindowAssigner, CountTrigger, CountTumblingWindowAssigner,
                                            DynamicEventTimeSessionWindows, EventTimeSessionWindows, GlobalWindows,
                                            ProcessingTimeSessionWindows, PurgingTrigger, SessionWindowTimeGapExtractor,
                                            SlidingEventTimeWindows, SlidingProcessingTimeWindows,
                                            TumblingEventTimeWindows, TumblingProcessingTimeWindows)

S = Time.seconds


class Gap(SessionWindowTimeGapExtractor):
    def __init__(self, gap):
        self.gap = gap

    def extract(self, element):
        return self.gap


CASES = {
    "Tumbling event size 0": lambda: TumblingEventTimeWindows.of(S(0)),
    "Tumbling event size -1": lambda: TumblingEventTimeWindows.of(S(-1)),
    "Tumbling event offset == size": lambda: TumblingEventTimeWindows.of(S(1), S(1)),
    "Tumbling event offset -size": lambda: TumblingEventTimeWindows.of(S(1), S(-1)),
    "Tumbling event offset < size": lambda: TumblingEventTimeWindows.of(S(2), S(-1)),
    "Tumbling processing size 0": lambda: TumblingProcessingTimeWindows.of(S(0)),
    "Tumbling processing offset > size": lambda: TumblingProcessingTimeWindows.of(S(1), S(2)),
    "Tumbling event size str": lambda: TumblingEventTimeWindows.of("1 s"),
    "Sliding event size 0": lambda: SlidingEventTimeWindows.of(S(0), S(1)),
    "Sliding event size -1": lambda: SlidingEventTimeWindows.of(S(-1), S(1)),
    "Sliding event slide 0": lambda: SlidingEventTimeWindows.of(S(2), S(0)),
    "Sliding event slide -1": lambda: SlidingEventTimeWindows.of(S(2), S(-1)),
    "Sliding event offset == slide": lambda: SlidingEventTimeWindows.of(S(4), S(2), S(2)),
    "Sliding event slide > size": lambda: SlidingEventTimeWindows.of(S(1), S(2)),
    "Sliding processing size 0": lambda: SlidingProcessingTimeWindows.of(S(0), S(1)),
    "Sliding processing slide 0": lambda: SlidingProcessingTimeWindows.of(S(2), S(0)),
    "Sliding processing offset -slide": lambda: SlidingProcessingTimeWindows.of(S(4), S(2), S(-2)),
    "Session event gap 0": lambda: EventTimeSessionWindows.with_gap(S(0)),
    "Session event gap -1": lambda: EventTimeSessionWindows.with_gap(S(-1)),
    "Session processing gap 0": lambda: ProcessingTimeSessionWindows.with_gap(S(0)),
    "Dynamic event gap 0 at assign": lambda: DynamicEventTimeSessionWindows.with_dynamic_gap(Gap(0))
        .assign_windows("x", 1000, None),
    "Dynamic event gap -5 at assign": lambda: EventTimeSessionWindows.with_dynamic_gap(Gap(-5))
        .assign_windows("x", 1000, None),
    "Dynamic event gap 5 at assign": lambda: DynamicEventTimeSessionWindows.with_dynamic_gap(Gap(5))
        .assign_windows("x", 1000, None),
    "Count tumbling 0": lambda: CountTumblingWindowAssigner.of(0),
    "Count tumbling -1": lambda: CountTumblingWindowAssigner.of(-1),
    "Count sliding size 0": lambda: CountSlidingWindowAssigner.of(0, 1),
    "Count sliding slide 0": lambda: CountSlidingWindowAssigner.of(2, 0),
    "Count sliding slide -1": lambda: CountSlidingWindowAssigner.of(2, -1),
    "CountTrigger 0": lambda: CountTrigger.of(0),
    "CountTrigger -1": lambda: CountTrigger.of(-1),
    "ContinuousEventTimeTrigger 0": lambda: ContinuousEventTimeTrigger.of(S(0)),
    "ContinuousEventTimeTrigger -1": lambda: ContinuousEventTimeTrigger.of(S(-1)),
    "ContinuousProcessingTimeTrigger 0": lambda: ContinuousProcessingTimeTrigger.of(S(0)),
    "PurgingTrigger None": lambda: PurgingTrigger.of(None),
    "PurgingTrigger 5": lambda: PurgingTrigger.of(5),
    "GlobalWindows": lambda: GlobalWindows.create(),
}


def caught_by(error):
    """The built-in exception classes an `except` clause can catch this error by."""
    names = [c.__name__ for c in (AttributeError, TypeError, ValueError) if isinstance(error, c)]
    return ",".join(names) or "Exception"


def main():
    for label, case in CASES.items():
        try:
            case()
        except Exception as error:  # the program reports every case and goes on
            print(f"{label}: {caught_by(error)} | {str(error).strip().splitlines()[0]}")
        else:
            print(f"{label}: ok")


if __name__ == "__main__":
    main()
