"""How the rows of live alerts become what the engine holds (`LoadedAlert`): the one shape of the three
readers of changed alerts (`incidents.load_live_alerts` through a session, `reads_now` on SQLite's
event loop connection and on PostgreSQL's driver connection); pure, no I/O."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from operator import itemgetter
from typing import Any

import orjson

from alertrouter.labelset import LabelSet
from alertrouter.model import AlertStatus
from alertrouter.pipeline.types import LiveAlert

__all__ = ["LIVE_STATE", "LoadedAlert", "loaded", "merged", "unheld"]

# A live alert as stored: its `updated_at`, and its last decision, decision detail and incident key.
LoadedAlert = tuple[LiveAlert, datetime, str | None, dict[str, Any] | None, str | None]

LIVE_STATE = ("status", "starts_at", "fired_at", "ends_at", "updated_at", "decision", "decision_detail", "incident_key")
"""The columns of a live alert's row `load_live_alerts` reads besides its fingerprint and labels."""


def unheld(
    stamps: Iterable[Sequence[Any]],
    known: Mapping[str, datetime],
    inserted: Mapping[str, tuple[LiveAlert, datetime]] | None,
    held: Mapping[str, LiveAlert] | None,
) -> tuple[list[LoadedAlert], list[str], list[str]]:
    """Of the changed rows' (fingerprint, `updated_at`): the alerts taken from ingest's handoff, the
    fingerprints whose rows must be read whole, and those whose state alone is read (their labels are
    the held ones); each list in fingerprint order. Rows held unchanged (`known`) are left out."""
    handed = inserted or {}
    out: list[LoadedAlert] = []
    wanted = []
    for fp, updated_at in stamps:
        if known.get(fp) == updated_at:
            continue
        mine = handed.get(fp)
        if mine is not None and mine[1] == updated_at:
            # Kept for as long as the alert is live: compact, its values shared as a read's are
            # (the webhook's JSON parser made a new string for each), done here, off ingest's path.
            out.append((replace(mine[0], labels=LabelSet(mine[0].labels)), updated_at, None, None, None))
        else:
            wanted.append(fp)
    holds = held or {}
    return out, sorted(fp for fp in wanted if fp not in holds), sorted(fp for fp in wanted if fp in holds)


def merged(
    out: list[LoadedAlert],
    whole: Iterable[Sequence[Any]],
    states: Iterable[Sequence[Any]],
    held: Mapping[str, LiveAlert] | None,
) -> list[LoadedAlert]:
    """`loaded` for the three readers of changed alerts (`unheld`'s lists read): the rows read `whole`
    and those whose state alone was read, with the held labels (what changes a live alert is its state;
    its labels, the largest column, never change), in fingerprint order, as one read would give them."""
    holds = held or {}
    rows = [*whole, *((fp, holds[fp].labels, *rest) for fp, *rest in states)]
    rows.sort(key=_first)
    return loaded(out, rows)


def loaded(out: list[LoadedAlert], rows: Iterable[Sequence[Any]]) -> list[LoadedAlert]:
    """`out`, and the rows read (fingerprint, labels, then `LIVE_STATE`) as live alerts after it."""
    details: dict[bytes, dict[str, Any]] = {}
    for fp, labels, status, starts_at, fired_at, ends_at, updated_at, decision, detail, key in rows:
        firing = status == AlertStatus.FIRING.value
        # Kept for as long as the alert is live: compact (see `LabelSet`).
        compact = labels if type(labels) is LabelSet else LabelSet(labels)
        live = LiveAlert(fp, compact, firing, starts_at, fired_at, None if firing else ends_at)
        if detail is not None:
            # The engine keeps every live alert's stored decision and detail (to compare the next one
            # with), and most alerts share them (100,000 live alerts held some 2,000 distinct details):
            # one object per value, not one per row. Incident keys likewise (a node's alerts share one).
            detail = details.setdefault(orjson.dumps(detail), detail)
        if decision is not None:
            decision = sys.intern(decision)
        if key is not None:
            key = sys.intern(key)
        out.append((live, updated_at, decision, detail, key))
    return out


_first = itemgetter(0)
