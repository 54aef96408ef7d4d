"""A computing thread's courtesy (`alertrouter.process.courtesy`): a pause every so often of its work, no more."""

from __future__ import annotations

from alertrouter.process.courtesy import Courtesy


class Time:
    """A clock that moves when told to, and a sleep that moves it by what was asked."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_it_pauses_once_every_period_of_work_and_not_between() -> None:
    t = Time()
    courtesy = Courtesy(every=0.002, pause=0.0001, clock=t.clock, sleep=t.sleep)
    courtesy()
    assert t.slept == [], "the first call starts the period: the thread has just taken the interpreter"
    for _ in range(19):  # 1.9 ms of work, 0.1 ms a call
        t.now += 0.0001
        courtesy()
    assert t.slept == [], "no pause within the period"
    t.now += 0.0001  # 2 ms of work
    courtesy()
    assert t.slept == [0.0001]
    for _ in range(20):  # 2 ms more, from the end of the pause
        t.now += 0.0001
        courtesy()
    assert t.slept == [0.0001, 0.0001]
    assert courtesy.pauses == 2


def test_a_call_after_a_rest_starts_a_new_period_without_a_pause() -> None:
    """The thread's next pass, seconds later, does not pause at its first call (the event loop, idle,
    just handed it the work), but two milliseconds into its work, as the first pass did."""
    t = Time()
    courtesy = Courtesy(every=0.002, pause=0.0001, clock=t.clock, sleep=t.sleep)
    courtesy()
    t.now += 0.0021
    courtesy()
    assert courtesy.pauses == 1
    t.now += 5.0  # the thread rested
    courtesy()
    assert courtesy.pauses == 1
    t.now += 0.0021
    courtesy()
    assert courtesy.pauses == 2


def test_the_period_counts_from_the_end_of_the_pause() -> None:
    """A pause that lasts long (another thread kept the interpreter) is not work: the next pause is a
    whole period of work after it, not due at once."""
    t = Time()

    def slow_sleep(seconds: float) -> None:
        t.sleep(seconds)
        t.now += 0.004  # the interpreter came back 4 ms later

    courtesy = Courtesy(every=0.002, pause=0.0001, clock=t.clock, sleep=slow_sleep)
    courtesy()
    t.now += 0.002
    courtesy()
    assert courtesy.pauses == 1
    t.now += 0.0015
    courtesy()
    assert courtesy.pauses == 1
    t.now += 0.0005
    courtesy()
    assert courtesy.pauses == 2
