"""Triage of one scope's Xid alerts (a node incident's, later a job's): which alert is the root cause, which
are only its consequences, what to do first, and whether the repetitions point at the hardware or at the
application.

Facts from NVIDIA's Xid catalog (`gpu.xid`, `data/xid_triage.csv`): a code the catalog calls a
consequence (45 "follow other Xid", 94/95 sympathetic, 154 the recovery action of an earlier Xid) that
starts on any GPU of the scope within `follow_on_window` after a root is folded into that root. The
repetition rules follow NVIDIA NVSentinel's health-events analyzer: the same fatal Xid on one GPU
`hardware_count` times within `hardware_window` -> HARDWARE; Xid 13/31 twice on the SAME GPU -> HARDWARE
(run the diagnostics); starts within `burst` of each other are one time. The same application Xid on
`application_gpus` different GPUs of one workload (or of the scope, when the workload is unknown) ->
APPLICATION. The reason is fields, not words: a message words
it in its own language.

Times are the alerts' `startsAt` and the events' `at`, never the clock: an alert that started days ago
counts from then. Hostile input is data: an unknown Xid is its own root (never a consequence), a missing
GPU key counts towards no GPU's repetitions nor any count of GPUs, a repeated alert counts once, a
consequence before every root stays its own root. Cost: a sort of the scope's alerts, then one walk of
them and of their GPUs' events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from alertrouter.gpu.events import GpuEvent
from alertrouter.gpu.xid import XidInfo, lookup

__all__ = [
    "DEFAULT_RULES",
    "UNKNOWN_ACTION",
    "Reason",
    "Root",
    "Rule",
    "Triage",
    "TriageRules",
    "Verdict",
    "XidAlert",
    "triage",
]

UNKNOWN_ACTION = "UNKNOWN"  # the action of a code the catalog gives no immediate bucket (or does not list)


@dataclass(frozen=True, slots=True)
class TriageRules:
    """The knobs of `rules/gpu_triage.yml` (`ruleset.gpu_triage`); these defaults are the shipped ones.
    `consequences`: None takes the catalog's; a set replaces it."""

    follow_on_window: timedelta = timedelta(minutes=5)
    burst: timedelta = timedelta(minutes=3)  # repetitions closer than this are one (NVSentinel's burst window)
    consequences: frozenset[int] | None = None
    hardware_count: int = 5
    hardware_window: timedelta = timedelta(hours=24)
    diagnose_xids: frozenset[int] = frozenset({13, 31})
    diagnose_count: int = 2
    diagnose_window: timedelta = timedelta(hours=24)
    application_gpus: int = 2
    application_window: timedelta = timedelta(hours=24)

    def is_consequence(self, info: XidInfo) -> bool:
        """A code unknown to the catalog never is, whatever the override says."""
        if not info.known:
            return False
        return info.consequence if self.consequences is None else info.code in self.consequences


DEFAULT_RULES = TriageRules()


@dataclass(frozen=True, slots=True)
class XidAlert:
    """One firing alert naming an Xid. `id`: the caller's handle (a fingerprint), handed back as given.
    `gpu`: the GPU's key (its UUID, or node/slot), "" when unknown; `workload`: "" when unknown."""

    id: str
    gpu: str
    workload: str
    xid: int
    starts_at: datetime


class Verdict(StrEnum):
    HARDWARE = "HARDWARE"
    APPLICATION = "APPLICATION"
    UNKNOWN = "UNKNOWN"


class Rule(StrEnum):
    """Which rule gave the verdict."""

    REPEATED_FATAL = "repeated_fatal"  # one fatal Xid repeated on one GPU: contact support (RMA)
    REPEATED_ON_GPU = "repeated_on_gpu"  # Xid 13/31 repeated on one GPU: run the diagnostics
    ACROSS_GPUS = "across_gpus"  # one application Xid on several GPUs: the application


@dataclass(frozen=True, slots=True)
class Reason:
    """Why the verdict, as figures: `count` occurrences (REPEATED_*) or GPUs (ACROSS_GPUS) against
    `threshold` within `window`; `gpus` the GPU (REPEATED_*) or the GPUs, sorted; `workload` for ACROSS_GPUS
    ("" when the workload is unknown)."""

    rule: Rule
    xid: int
    count: int
    threshold: int
    window: timedelta
    gpus: tuple[str, ...]
    workload: str = ""


@dataclass(frozen=True, slots=True)
class Root:
    """A root alert, its own duplicates (`same`: the same Xid on the same GPU again) and the consequences
    folded into it (`follow_ons`, in time order, their duplicates included)."""

    alert: XidAlert
    info: XidInfo
    same: tuple[XidAlert, ...] = ()
    follow_ons: tuple[XidAlert, ...] = ()

    @property
    def action(self) -> str:
        """NVIDIA's immediate bucket of the root's Xid (RESET_GPU, RESTART_BM, RESTART_APP, ...)."""
        return self.info.bucket or UNKNOWN_ACTION


@dataclass(frozen=True, slots=True)
class Triage:
    """`roots`: the primary first (the earliest fault: not a consequence, not informational), then the other
    faults, then the roots that are not faults (a consequence with no root before it, an informational
    Xid), each in time order. `action`: the primary's bucket, "" for no alerts."""

    roots: tuple[Root, ...] = ()
    verdict: Verdict = Verdict.UNKNOWN
    reason: Reason | None = None

    @property
    def action(self) -> str:
        return self.roots[0].action if self.roots else ""

    @property
    def follow_ons(self) -> int:
        return sum(len(r.follow_ons) for r in self.roots)


@dataclass(slots=True)
class _Open:
    alert: XidAlert
    info: XidInfo
    fault: bool
    same: list[XidAlert] = field(default_factory=list)
    follow_ons: list[XidAlert] = field(default_factory=list)


def _unique(alerts: Iterable[XidAlert]) -> list[tuple[XidAlert, list[XidAlert]]]:
    """Each distinct fault once, earliest first, with its later duplicates: one Xid on one GPU is one fault;
    without a GPU key only the same alert (its `id`) twice is."""
    ordered = sorted(alerts, key=lambda a: (a.starts_at, a.gpu, a.xid, a.id))
    groups: dict[tuple[str, int, str], tuple[XidAlert, list[XidAlert]]] = {}
    seen: set[str] = set()
    for a in ordered:
        if a.id in seen:
            continue
        seen.add(a.id)
        key = (a.gpu, a.xid, "") if a.gpu else ("", a.xid, a.id)
        group = groups.get(key)
        if group is None:
            groups[key] = (a, [])
        else:
            group[1].append(a)
    return list(groups.values())


def _fold(alerts: Iterable[XidAlert], rules: TriageRules) -> list[_Open]:
    """Roots with their consequences, in time order. A consequence joins the latest fault root that started
    at most `follow_on_window` before it (the earlier ones started earlier still)."""
    roots: list[_Open] = []
    last_fault: _Open | None = None
    for first, dups in _unique(alerts):
        info = lookup(first.xid)
        if rules.is_consequence(info):
            if last_fault is not None and first.starts_at - last_fault.alert.starts_at <= rules.follow_on_window:
                last_fault.follow_ons.extend([first, *dups])
                continue
            roots.append(_Open(first, info, False, dups))
            continue
        root = _Open(first, info, info.kind != "informational", dups)
        roots.append(root)
        if root.fault:
            last_fault = root
    return roots


def _occurrences(root: _Open, events: Sequence[GpuEvent], window: timedelta, burst: timedelta) -> int:
    """How many times the root's Xid started on its GPU within `window` up to its latest alert: start times
    at most `burst` apart are one occurrence (the same fault through two alerts, an event and its alert)."""
    anchor = max([root.alert.starts_at, *(a.starts_at for a in root.same)])
    code = root.alert.xid
    since = anchor - window
    times = sorted({anchor, *(a.starts_at for a in root.same), *(e.at for e in events if e.xid == code)})
    count, last = 0, None
    for t in times:
        if since <= t <= anchor and (last is None or t - last > burst):
            count += 1
            last = t
    return count


def _repeated(roots: Sequence[_Open], history: Mapping[str, Sequence[GpuEvent]], rules: TriageRules) -> Reason | None:
    """The first root whose Xid repeats on its GPU: a fatal one `hardware_count` times, or a diagnose one
    (13, 31) `diagnose_count` times; a fatal repetition before a diagnose one."""
    found: Reason | None = None
    for r in roots:
        if not r.fault or not r.alert.gpu:
            continue
        if r.info.fatal:
            rule, threshold, window = Rule.REPEATED_FATAL, rules.hardware_count, rules.hardware_window
        elif r.alert.xid in rules.diagnose_xids:
            rule, threshold, window = Rule.REPEATED_ON_GPU, rules.diagnose_count, rules.diagnose_window
        else:
            continue
        if found is not None and (rule is Rule.REPEATED_ON_GPU or found.rule is Rule.REPEATED_FATAL):
            continue
        count = _occurrences(r, history.get(r.alert.gpu, ()), window, rules.burst)
        if count >= threshold:
            found = Reason(rule, r.alert.xid, count, threshold, window, (r.alert.gpu,))
    return found


def _across(roots: Sequence[_Open], rules: TriageRules) -> Reason | None:
    """The first application Xid that started on `application_gpus` different GPUs of one workload within
    `application_window` (the roots are in time order, so a group's window ends at its latest alert)."""
    groups: dict[tuple[str, int], list[XidAlert]] = {}
    for r in roots:
        if r.fault and r.info.kind == "application" and r.alert.gpu:
            groups.setdefault((r.alert.workload, r.alert.xid), []).append(r.alert)
    for (workload, code), alerts in groups.items():
        latest = alerts[-1].starts_at
        gpus = sorted({a.gpu for a in alerts if latest - a.starts_at <= rules.application_window})
        if len(gpus) >= rules.application_gpus:
            window = rules.application_window
            return Reason(Rule.ACROSS_GPUS, code, len(gpus), rules.application_gpus, window, tuple(gpus), workload)
    return None


def triage(
    alerts: Iterable[XidAlert],
    history: Mapping[str, Sequence[GpuEvent]] | None = None,
    rules: TriageRules = DEFAULT_RULES,
) -> Triage:
    """Triage one scope. `history`: GPU key -> that GPU's past events (those of the current alerts may be
    among them: one start time counts once)."""
    opened = _fold(alerts, rules)
    if not opened:
        return Triage()
    reason = _repeated(opened, history or {}, rules)
    verdict = Verdict.HARDWARE
    if reason is None:
        reason = _across(opened, rules)
        verdict = Verdict.APPLICATION if reason is not None else Verdict.UNKNOWN
    ordered = [r for r in opened if r.fault] + [r for r in opened if not r.fault]
    roots = tuple(Root(r.alert, r.info, tuple(r.same), tuple(r.follow_ons)) for r in ordered)
    return Triage(roots, verdict, reason)
