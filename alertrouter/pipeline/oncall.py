"""Who is on call: rotations of people in layers, handed over at a local wall-clock time, with overrides.

Pure maths, no I/O. A layer's shifts are `rotation` long in the schedule's *local* time: a daily
rotation handed over at 10:00 is handed over at 10:00 by the wall clock on both sides of a DST
change (that day's shift is 23 or 25 hours long). Handover k is the local time `start + k * rotation`
read in the zone; a handover that falls in the hour a spring-forward change skips is read with the
offset before the change (02:30 on the night Europe/Berlin skips 02:00-03:00 is 03:30 CEST), one that
falls in the repeated hour of a fall-back change is its first occurrence. `who` and `next_change`
both derive from those instants, so they always agree.

Precedence at an instant: an override in force (the last listed wins), else the last layer that has
someone on call then (a restricted layer, e.g. nights only, covers the earlier layers only inside
its hours), else no one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta, tzinfo

__all__ = ["Layer", "OnCall", "Override", "Person", "Rota", "Schedule", "Shift"]

_SEARCH_DAYS = 400  # how far `next_change` looks ahead before it says "no change"


@dataclass(frozen=True, slots=True)
class Person:
    """Someone who can be on call, with how each channel reaches them (empty: not known there)."""

    name: str
    display_name: str = ""
    mobile: str = ""
    dingtalk: str = ""  # DingTalk user id (atUserIds)
    wecom: str = ""  # WeCom user id (mentioned_list)
    email: str = ""

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass(frozen=True, slots=True)
class Layer:
    """People taking turns, `rotation` each, the first from `start` (a local wall-clock time).
    `restrict`: the daily local hours [from, to) the layer covers (may wrap midnight); None: all day."""

    name: str
    people: tuple[str, ...]
    rotation: timedelta
    start: datetime  # naive, local to the schedule's zone
    restrict: tuple[time, time] | None = None

    def __post_init__(self) -> None:
        if not self.people:
            raise ValueError(f"layer {self.name}: needs at least one person")
        if self.rotation <= timedelta(0):
            raise ValueError(f"layer {self.name}: rotation must be positive")
        if self.start.tzinfo is not None:
            raise ValueError(f"layer {self.name}: start is a local (naive) time")


@dataclass(frozen=True, slots=True)
class Override:
    """`person` is on call from `start` (included) to `end` (excluded), whatever the layers say."""

    start: datetime  # aware
    end: datetime  # aware
    person: str


@dataclass(frozen=True, slots=True)
class OnCall:
    """Who is on call at an instant and why: the layer's name, or `override`; person None: no one."""

    person: str | None
    source: str


@dataclass(frozen=True, slots=True)
class Shift:
    """A stretch of time with one answer to "who is on call": from `start` to `end` (None: no change
    found within a year)."""

    oncall: OnCall
    start: datetime
    end: datetime | None


def _utc(local: datetime, zone: tzinfo) -> datetime:
    """A naive local wall-clock time as a UTC instant (fold=0: see the module docstring)."""
    return local.replace(tzinfo=zone, fold=0).astimezone(UTC)


def _local(at: datetime, zone: tzinfo) -> datetime:
    return at.astimezone(zone).replace(tzinfo=None)


@dataclass(frozen=True, slots=True)
class Schedule:
    name: str
    zone: tzinfo
    layers: tuple[Layer, ...]
    overrides: tuple[Override, ...] = ()
    timezone: str = "UTC"

    def _handover(self, layer: Layer, k: int) -> datetime:
        return _utc(layer.start + k * layer.rotation, self.zone)

    def _shift_index(self, layer: Layer, at: datetime) -> int:
        """k such that handover k <= at < handover k+1 (negative before the layer's start)."""
        k = (_local(at, self.zone) - layer.start) // layer.rotation
        while self._handover(layer, k + 1) <= at:
            k += 1
        while self._handover(layer, k) > at:
            k -= 1
        return k

    def _covers(self, layer: Layer, at: datetime) -> bool:
        if at < self._handover(layer, 0):  # a layer starts with its first shift
            return False
        if layer.restrict is None:
            return True
        begin, end = layer.restrict
        now = _local(at, self.zone).time()
        return begin <= now < end if begin < end else (now >= begin or now < end)

    def layer_person(self, layer: Layer, at: datetime) -> str | None:
        """Whose turn it is in `layer` at `at` (None outside its hours or before its start)."""
        if not self._covers(layer, at):
            return None
        return layer.people[self._shift_index(layer, at) % len(layer.people)]

    def who(self, at: datetime) -> OnCall:
        """Who is on call at the aware instant `at`."""
        for override in reversed(self.overrides):
            if override.start <= at < override.end:
                return OnCall(override.person, "override")
        for layer in reversed(self.layers):
            person = self.layer_person(layer, at)
            if person is not None:
                return OnCall(person, layer.name)
        return OnCall(None, "")

    def _changes_after(self, at: datetime) -> Iterator[datetime]:
        """Instants after `at` at which the answer may change, in no particular order, within a day."""
        day = _local(at, self.zone).date()
        for layer in self.layers:
            yield self._handover(layer, self._shift_index(layer, at) + 1)
            yield _utc(layer.start, self.zone)
            if layer.restrict is not None:
                for offset in (0, 1):
                    for clock in layer.restrict:
                        yield _utc(datetime.combine(day + timedelta(days=offset), clock), self.zone)
        for override in self.overrides:
            yield override.start
            yield override.end

    def next_change(self, at: datetime) -> datetime | None:
        """The first instant after `at` at which someone else (or no one) is on call."""
        current = self.who(at).person
        cursor = at
        limit = at + timedelta(days=_SEARCH_DAYS)
        while cursor < limit:
            later = [t for t in self._changes_after(cursor) if t > cursor]
            if not later:
                return None
            cursor = min(later)
            if self.who(cursor).person != current:
                return cursor
        return None

    def shifts(self, at: datetime, count: int = 2) -> list[Shift]:
        """The shift in force at `at` (its start is `at` itself: when it began is not looked for) and the
        `count - 1` after it."""
        out: list[Shift] = []
        start = at
        for _ in range(count):
            end = self.next_change(start)
            out.append(Shift(self.who(start), start, end))
            if end is None:
                break
            start = end
        return out

    def upcoming_overrides(self, at: datetime) -> list[Override]:
        return sorted((o for o in self.overrides if o.end > at), key=lambda o: o.start)


@dataclass(frozen=True, slots=True)
class Rota:
    """The people and schedules of the rules (`people:` and `oncall:`)."""

    people: dict[str, Person] = field(default_factory=dict)
    schedules: dict[str, Schedule] = field(default_factory=dict)

    def on_call(self, schedule: str, at: datetime) -> Person | None:
        """The person on call for `schedule` at `at`; None if no one is (or the schedule is unknown)."""
        found = self.schedules.get(schedule)
        if found is None:
            return None
        name = found.who(at).person
        return None if name is None else self.people.get(name)

    def people_on_call(self, schedules: Sequence[str], at: datetime) -> list[tuple[str, Person]]:
        """(schedule, person) for each schedule that has someone on call at `at`."""
        return [(s, p) for s in schedules if (p := self.on_call(s, at)) is not None]
