"""Inhibition: which firing alerts mute which others, with Alertmanager's semantics, indexed.

Semantics (Alertmanager 0.25 ``inhibit/inhibit.go``): a target is muted by a rule when its labels
match the rule's target matchers and some *firing* alert other than itself matches the source
matchers with equal values for every ``equal`` label (an absent label is ``""`` on either side).
When the target also matches the source matchers, sources that also match the target matchers
are ignored (``excludeTwoSidedMatch``): two alerts that both match both sides never mute each
other. The target's own firing flag is not consulted, so a resolved target stays muted while
its source fires and its resolved notification can be suppressed too.

Unlike Alertmanager, which reports an arbitrary source (map order), the reported source is
deterministic: the first muting rule in config order, then the smallest source fingerprint.
The state is only what ``update``/``remove`` fed in, so the caller rebuilds it from the store.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from alertrouter.labels import Matcher, MatchType, matches_all
from alertrouter.model import AlertView

__all__ = ["InhibitRule", "Inhibition", "Inhibitor"]

_ALERTNAME = "alertname"
_BucketKey = tuple[int | str, ...]  # a rule's order, then its `equal` values
# A regex that is only a plain alternation of names (``GPUTemp|GPUXid``) matches exactly that set.
_LITERAL_ALTERNATION = re.compile(r"[A-Za-z0-9_:]+(?:\|[A-Za-z0-9_:]+)*")


@dataclass(frozen=True, slots=True)
class InhibitRule:
    name: str
    source: tuple[Matcher, ...]
    target: tuple[Matcher, ...]
    equal: tuple[str, ...] = ()
    # How long a target's first notification waits, so a source arriving late can still mute it.
    hold_down: timedelta = timedelta(seconds=30)

    def __post_init__(self) -> None:
        if self.hold_down < timedelta(0):
            raise ValueError(f"inhibit rule {self.name!r}: hold_down must not be negative")


@dataclass(frozen=True, slots=True)
class Inhibition:
    """Why an alert is muted: the rule's name and the fingerprint of one firing source."""

    rule: str
    source_fingerprint: str


def _alertnames(matchers: Sequence[Matcher]) -> frozenset[str] | None:
    """The only alertnames the matchers can accept, or None when any alertname may pass."""
    for matcher in matchers:
        if matcher.name != _ALERTNAME:
            continue
        if matcher.type is MatchType.EQ:
            return frozenset((matcher.value,))
        if matcher.type is MatchType.RE and _LITERAL_ALTERNATION.fullmatch(matcher.value):
            return frozenset(matcher.value.split("|"))
    return None


@dataclass(slots=True)
class _Bucket:
    """Firing sources of one rule sharing one tuple of ``equal`` values, kept sorted.

    ``one_sided`` match only the source matchers, ``two_sided`` match the target matchers too;
    split so that the two-sided exclusion and the smallest-fingerprint choice are O(1).
    """

    key: tuple[str, ...]  # held by every source's placement in it: one tuple per bucket, not per source
    one_sided: list[str] = field(default_factory=list)
    two_sided: list[str] = field(default_factory=list)


def _first_other(fingerprints: list[str], own: str) -> str | None:
    for fp in fingerprints[:2]:  # sorted and unique: `own` can hide at most one entry
        if fp != own:
            return fp
    return None


class _Rule:
    __slots__ = ("buckets", "equal", "order", "rule")

    def __init__(self, order: int, rule: InhibitRule) -> None:
        self.order = order
        self.rule = rule
        self.equal = tuple(dict.fromkeys(rule.equal))  # duplicates change nothing
        self.buckets: dict[tuple[str, ...], _Bucket] = {}

    def key(self, labels: Mapping[str, str]) -> tuple[str, ...]:
        return tuple([labels.get(name, "") for name in self.equal])

    def bucket(self, labels: Mapping[str, str]) -> _BucketKey:
        """The rule's bucket for these labels as `Inhibitor` indexes targets: one flat tuple, not the
        order and `key` as a pair (with 108,000 live alerts, a nested one cost 10 MiB more)."""
        return (self.order, *[labels.get(name, "") for name in self.equal])

    def add(self, key: tuple[str, ...], fingerprint: str, two_sided: bool) -> tuple[str, ...]:
        """Add a source to its bucket; the bucket's own key (equal to `key`), for the caller to hold."""
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = _Bucket(key)
        bisect.insort(bucket.two_sided if two_sided else bucket.one_sided, fingerprint)
        return bucket.key

    def discard(self, key: tuple[str, ...], fingerprint: str, two_sided: bool) -> None:
        bucket = self.buckets[key]
        side = bucket.two_sided if two_sided else bucket.one_sided
        del side[bisect.bisect_left(side, fingerprint)]
        if not bucket.one_sided and not bucket.two_sided:
            del self.buckets[key]


@dataclass(frozen=True, slots=True)
class _Placement:
    labels: Mapping[str, str]
    entries: tuple[tuple[_Rule, tuple[str, ...], bool], ...]


def _by_alertname(rules: Sequence[_Rule], *, source: bool) -> tuple[dict[str, tuple[_Rule, ...]], tuple[_Rule, ...]]:
    """Rules per alertname their source (or target) side requires, in config order, and the rest."""
    named: dict[str, list[_Rule]] = {}
    generic: list[_Rule] = []
    for rule in rules:
        names = _alertnames(rule.rule.source if source else rule.rule.target)
        if names is None:
            generic.append(rule)
        for name in names or ():
            named.setdefault(name, []).append(rule)
    merged = {name: tuple(sorted([*listed, *generic], key=lambda r: r.order)) for name, listed in named.items()}
    return merged, tuple(generic)


def _by_hold_down(rules: Sequence[_Rule]) -> tuple[InhibitRule, ...]:
    return tuple(sorted((r.rule for r in rules), key=lambda r: r.hold_down, reverse=True))


class Inhibitor:
    """Alertmanager inhibition semantics over a set of alerts that changes incrementally.

    Rules are indexed by the alertnames their source and target sides require, so ``update``
    and ``mutes`` cost O(candidate rules), independent of the number of alerts held; sources
    are kept per rule in buckets keyed by their ``equal`` values.
    """

    def __init__(self, rules: Sequence[InhibitRule]) -> None:
        seen: set[str] = set()
        for rule in rules:
            if rule.name in seen:
                raise ValueError(f"duplicate inhibit rule name {rule.name!r}")
            seen.add(rule.name)
        compiled = [_Rule(order, rule) for order, rule in enumerate(rules)]
        self._by_source, self._generic_source = _by_alertname(compiled, source=True)
        self._by_target, self._generic_target = _by_alertname(compiled, source=False)
        # The same candidates, longest hold-down first: the first whose target matches answers.
        self._hold_by_target = {name: _by_hold_down(listed) for name, listed in self._by_target.items()}
        self._hold_generic = _by_hold_down(self._generic_target)
        self._placed: dict[str, _Placement] = {}
        # Targets by the buckets that can mute them (rule, `equal` values) -> fingerprints, and the
        # buckets whose sources changed since `affected()` was last asked: an engine pass re-checks
        # only the targets a changed source can mute or release.
        # A bucket of one target holds its fingerprint, not a set of one: most buckets are one alert's
        # (a rule whose `equal` names the GPU), and an empty set alone is 216 bytes.
        self._targets: dict[_BucketKey, str | set[str]] = {}
        self._tracked: dict[str, Mapping[str, str]] = {}  # fingerprint -> its labels, as tracked
        self._touched: set[_BucketKey] = set()

    def _source_candidates(self, labels: Mapping[str, str]) -> tuple[_Rule, ...]:
        return self._by_source.get(labels.get(_ALERTNAME, ""), self._generic_source)

    def _target_candidates(self, labels: Mapping[str, str]) -> tuple[_Rule, ...]:
        return self._by_target.get(labels.get(_ALERTNAME, ""), self._generic_target)

    def update(self, alert: AlertView) -> None:
        """Add or refresh ``alert`` as a potential source; a resolved alert stops being one."""
        if not alert.firing:
            self.remove(alert.fingerprint)
            return
        labels = alert.labels
        placed = self._placed.get(alert.fingerprint)
        if placed is not None:
            if placed.labels is labels or placed.labels == labels:
                return  # a refresh of what is held: the common case on every group_interval
            self.remove(alert.fingerprint)
        entries: list[tuple[_Rule, tuple[str, ...], bool]] = []
        for rule in self._source_candidates(labels):
            if matches_all(rule.rule.source, labels):
                two_sided = matches_all(rule.rule.target, labels)
                key = rule.add(rule.key(labels), alert.fingerprint, two_sided)
                entries.append((rule, key, two_sided))
                self._touched.add((rule.order, *key))
        # Held even when no rule matched, so the next refresh is recognised as one. The view's own
        # labels, not a copy: a view's labels are never changed once it is made (a changed alert is a
        # new view), and with 100,000 live alerts each copy here cost about 55 MiB.
        self._placed[alert.fingerprint] = _Placement(labels, tuple(entries))

    def remove(self, fingerprint: str) -> None:
        """Forget an alert as a source; unknown fingerprints are ignored."""
        placed = self._placed.pop(fingerprint, None)
        if placed is None:
            return
        for rule, key, two_sided in placed.entries:
            rule.discard(key, fingerprint, two_sided)
            self._touched.add((rule.order, *key))

    def _target_buckets(self, labels: Mapping[str, str]) -> Iterator[_BucketKey]:
        """The buckets (rule, `equal` values) whose sources can mute an alert with these labels."""
        for rule in self._target_candidates(labels):
            if matches_all(rule.rule.target, labels):
                yield rule.bucket(labels)

    def track(self, alert: AlertView) -> None:
        """Index ``alert`` as a potential target (firing or not: a resolved target stays muted)."""
        labels = alert.labels
        held = self._tracked.get(alert.fingerprint)
        if held is not None:
            if held is labels or held == labels:
                return
            self.untrack(alert.fingerprint)
        targets, fp = self._targets, alert.fingerprint
        for key in self._target_buckets(labels):
            bucket = targets.get(key)
            if bucket is None:
                targets[key] = fp
            elif isinstance(bucket, str):
                if bucket != fp:
                    targets[key] = {bucket, fp}
            else:
                bucket.add(fp)
        # Only the labels, held not copied (see `update`): its buckets are worked out again from them
        # when it is untracked, rather than kept as a tuple per alert.
        self._tracked[fp] = labels

    def untrack(self, fingerprint: str) -> None:
        """Forget an alert as a target; unknown fingerprints are ignored."""
        held = self._tracked.pop(fingerprint, None)
        if held is None:
            return
        targets = self._targets
        for key in self._target_buckets(held):
            bucket = targets.get(key)
            if isinstance(bucket, str):
                if bucket == fingerprint:
                    del targets[key]
            elif bucket is not None:
                bucket.discard(fingerprint)
                if len(bucket) == 1:
                    targets[key] = next(iter(bucket))
                elif not bucket:
                    del targets[key]

    def affected(self) -> set[str]:
        """The tracked targets whose inhibition may have changed since the last call: those a source
        added, refreshed with other labels, or removed since then can mute."""
        out: set[str] = set()
        for key in self._touched:
            bucket = self._targets.get(key)
            if isinstance(bucket, str):
                out.add(bucket)
            elif bucket is not None:
                out.update(bucket)
        self._touched.clear()
        return out

    def mutes(self, alert: AlertView) -> Inhibition | None:
        """The inhibition muting ``alert``, or None; ``alert.firing`` is deliberately ignored."""
        labels = alert.labels
        own = alert.fingerprint
        for rule in self._target_candidates(labels):
            if not rule.buckets:  # no source of it fires: the common case, asked for every alert sorted
                continue
            bucket = rule.buckets.get(rule.key(labels))
            if bucket is None or not matches_all(rule.rule.target, labels):
                continue
            source = _first_other(bucket.one_sided, own)
            if not matches_all(rule.rule.source, labels):
                other = _first_other(bucket.two_sided, own)
                if other is not None and (source is None or other < source):
                    source = other
            if source is not None:
                return Inhibition(rule.rule.name, source)
        return None

    def hold_down(self, alert: AlertView) -> timedelta | None:
        """The longest hold-down of the rules whose target matchers match ``alert``, else None.

        Independent of which sources are firing: it is how long to wait for one to arrive.
        """
        labels = alert.labels
        for rule in self._hold_by_target.get(labels.get(_ALERTNAME, ""), self._hold_generic):
            if matches_all(rule.target, labels):
                return rule.hold_down
        return None
