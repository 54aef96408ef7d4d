"""The Alertmanager webhook bodies (version 4) the engine and web tests send: one builder, of every field
Alertmanager sends but each alert's `fingerprint` (see `webhook`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypedDict

__all__ = ["ENDS_AT", "EXTERNAL_URL", "STARTS_AT", "ZERO_TIME", "OwnFields", "Status", "webhook"]

Status = Literal["firing", "resolved"]

ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time: the endsAt Alertmanager sends for an alert still firing
STARTS_AT = "2026-11-21T07:59:00Z"  # a minute before the engine tests' clock starts (`support.passes.T0`)
ENDS_AT = "2026-11-21T08:30:00Z"  # a resolved alert's endsAt when the test gives none
EXTERNAL_URL = "http://alertmanager:9093"


class OwnFields(TypedDict, total=False):
    """What one alert of a notification has of its own, in place of `webhook`'s `starts_at` or
    `annotations` for all (a group's alerts started when each did, each with its rule's annotations)."""

    starts_at: str | datetime
    annotations: Mapping[str, str]


def _rfc3339(t: str | datetime) -> str:
    """`t` as Alertmanager writes a time (Go's RFC 3339, nanoseconds with trailing zeros cut, in UTC);
    a string is sent as given."""
    if isinstance(t, str):
        return t
    if t.utcoffset() is None:
        raise ValueError(f"{t!r}: a webhook's times carry a time zone")
    utc = t.astimezone(UTC)
    fraction = f".{utc.microsecond:06d}".rstrip("0") if utc.microsecond else ""
    return f"{utc:%Y-%m-%dT%H:%M:%S}{fraction}Z"


def _common(sets: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """The pairs every one of `sets` holds (Alertmanager's commonLabels and commonAnnotations)."""
    if not sets:
        return {}
    first, *rest = sets
    return {k: v for k, v in first.items() if all(s.get(k) == v for s in rest)}


def _label_set(labels: Mapping[str, str]) -> str:
    """A label set as Prometheus prints one (`LabelSet.String()`): `{a="1", b="2"}`, by name."""
    return "{" + ", ".join(f"{k}={json.dumps(labels[k], ensure_ascii=False)}" for k in sorted(labels)) + "}"


def webhook(
    alerts: Iterable[Mapping[str, str]],
    *,
    status: Status = "firing",
    starts_at: str | datetime = STARTS_AT,
    ends_at: str | datetime | None = None,
    annotations: Mapping[str, str] | None = None,
    receiver: str = "alertrouter",
    group_by: Sequence[str] = (),
    external_url: str = EXTERNAL_URL,
    generator_url: str = "",
    own: Sequence[OwnFields] | None = None,
) -> bytes:
    """The body Alertmanager POSTs to a webhook receiver for one notification of its group: one alert
    per label set in `alerts`, each with `status`, `annotations` and these times (or its `own`).

    A firing alert's endsAt is Go's zero time, whatever Alertmanager holds (it does not expose an end
    not yet reached): `ends_at` is for a resolved one, when it resolved (`ENDS_AT` if not given).
    `group_by`: the route's group_by, whose values the group's alerts share (groupLabels, groupKey
    under the root route). `generator_url`: what the sender set (Prometheus: a link to the rule's
    expression; nothing for an alert posted by hand). `own`: one `OwnFields` per label set in `alerts`,
    in order, for alerts whose start or annotations differ from the others' (commonAnnotations: the
    pairs all share). Each alert's `fingerprint` is left out: alertrouter works its own out from the
    labels, and writing it here with alertrouter's function would make a test of the two agree by
    construction (`tests/e2e` takes real Alertmanager's)."""
    if status not in ("firing", "resolved"):
        raise ValueError(f"status {status!r}: firing or resolved")
    if status == "firing" and ends_at is not None:
        raise ValueError("a firing alert's endsAt is Go's zero time in a webhook: ends_at is for a resolved one")
    label_sets = [dict(labels) for labels in alerts]
    fields = [OwnFields() for _ in label_sets] if own is None else list(own)
    if len(fields) != len(label_sets):
        raise ValueError(f"own: {len(fields)} for {len(label_sets)} alerts, one each")
    starts = _rfc3339(starts_at)
    notes = [dict(f.get("annotations", annotations or {})) for f in fields]
    alert_starts = [_rfc3339(f["starts_at"]) if "starts_at" in f else starts for f in fields]
    ends = ZERO_TIME if status == "firing" else _rfc3339(ENDS_AT if ends_at is None else ends_at)
    common = _common(label_sets)
    group = {k: common[k] for k in group_by if k in common}
    body: dict[str, Any] = {  # in the order Alertmanager writes them
        "receiver": receiver,
        "status": status,
        "alerts": [
            {
                "status": status,
                "labels": labels,
                "annotations": own_notes,
                "startsAt": own_starts,
                "endsAt": ends,
                "generatorURL": generator_url,
            }
            for labels, own_notes, own_starts in zip(label_sets, notes, alert_starts, strict=True)
        ],
        "groupLabels": group,
        "commonLabels": common,
        "commonAnnotations": _common(notes),
        "externalURL": external_url,
        "version": "4",
        "groupKey": f"{{}}:{_label_set(group)}",
        "truncatedAlerts": 0,
    }
    return json.dumps(body).encode()
