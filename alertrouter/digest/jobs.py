"""The week's jobs hit (`job_hits`, when the `jobs:` rules are on): per job, how often it was interrupted (its
episodes opened in the week), the GPU-hours it lost within the week, and the share of them hardware or the
application caused (`jobs.impact`'s cause of each episode; the rest unknown).

An episode's GPU-seconds are known up to its last change (and its open tail at `gpus_lost` up to the read);
one that spans the week's start or end counts the part of them within the week, pro rata of its time."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from gettext import NullTranslations
from typing import Any

from alertrouter.store.jobs import JobWeekFact

__all__ = ["JOBS_TOP", "JobWeek", "job_section", "job_weeks"]

JOBS_TOP = 20  # jobs listed, the most GPU-hours lost first; the rest are counted


@dataclass(frozen=True, slots=True)
class JobWeek:
    key: str
    interruptions: int
    gpu_hours: float
    hardware: float  # share of gpu_hours, 0..1
    application: float


def _in_week(fact: JobWeekFact, start: datetime, end: datetime, now: datetime) -> float:
    """The episode's GPU-seconds within [start, end)."""
    stop = fact.resolved_at or now
    seconds = fact.gpu_seconds
    if fact.resolved_at is None:
        seconds += fact.gpus_lost * max(0.0, (now - fact.updated_at).total_seconds())
    span = (stop - fact.opened_at).total_seconds()
    inside = (min(stop, end) - max(fact.opened_at, start)).total_seconds()
    if span <= 0:
        return seconds if start <= fact.opened_at < end else 0.0
    return seconds * max(0.0, min(1.0, inside / span))


def job_weeks(facts: Iterable[JobWeekFact], *, start: datetime, end: datetime, now: datetime) -> list[JobWeek]:
    """Per job, the most GPU-hours lost first, then by key."""
    found: dict[str, list[float]] = {}  # key -> [interruptions, seconds, hardware seconds, application seconds]
    for fact in facts:
        into = found.setdefault(fact.key, [0, 0.0, 0.0, 0.0])
        seconds = _in_week(fact, start, end, now)
        into[0] += start <= fact.opened_at < end
        into[1] += seconds
        into[2] += seconds if fact.cause == "hardware" else 0.0
        into[3] += seconds if fact.cause == "application" else 0.0
    weeks = [
        JobWeek(key, int(n), round(s / 3600, 1), hw / s if s else 0.0, app / s if s else 0.0)
        for key, (n, s, hw, app) in found.items()
    ]
    return sorted(weeks, key=lambda w: (-w.gpu_hours, w.key))


def job_section(jobs: list[JobWeek] | None, tr: NullTranslations) -> dict[str, Any]:
    """The templates' `jobs` (None: no section, the `jobs:` rules are off) and `jobs_more`."""
    if jobs is None:
        return {"jobs": None, "jobs_more": 0}
    rows = [
        {
            "job": job.key,
            "times": tr.ngettext("interrupted %(num)s time", "interrupted %(num)s times", job.interruptions)
            % {"num": job.interruptions},
            "hours": f"{job.gpu_hours:.1f}",
            "hardware": f"{job.hardware:.0%}",
            "application": f"{job.application:.0%}",
        }
        for job in jobs[:JOBS_TOP]
    ]
    return {"jobs": rows, "jobs_more": max(0, len(jobs) - JOBS_TOP)}
