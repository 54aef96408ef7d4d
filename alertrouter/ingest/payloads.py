"""Parse and validate both ingest shapes into an `IngestBatch`, naming the field on every error.

Alertmanager's camelCase lives here and nowhere else. An alert that fails validation is rejected
on its own: the others in the payload are still stored, since a 4xx is never retried and
rejecting the whole batch would lose alerts that were fine.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from alertrouter.fingerprints import fingerprint as label_fingerprint
from alertrouter.fingerprints import fingerprints as label_fingerprints
from alertrouter.ingest import decode
from alertrouter.ingest.batch import IngestBatch, body_digest, payload_digest
from alertrouter.ingest.decode import Checked, Fields, Rfc3339, non_empty
from alertrouter.ingest.limits import (
    MAX_ALERTNAME,
    MAX_ANNOTATION_VALUE,
    MAX_ANNOTATIONS,
    MAX_GENERATOR_URL,
    MAX_LABEL_VALUE,
    MAX_LABELS,
    MAX_RECEIVER,
    MAX_TRUNCATED,
    check_instant,
    check_mapping,
)
from alertrouter.model import AlertStatus
from alertrouter.ruleset.errors import format_loc
from alertrouter.transitions import IncomingAlert

__all__ = ["API_V2_DEFAULT_TTL", "Parsed", "PayloadError", "parse_api_v2", "parse_webhook"]

API_V2_DEFAULT_TTL = timedelta(minutes=5)  # Alertmanager's resolve_timeout default
WEBHOOK_VERSION = "4"
_FINGERPRINT_CHARS = frozenset("0123456789abcdef")
_TOO_DEEP = "body: nested too deeply (Alertmanager's payloads are a few levels deep)"


class PayloadError(Exception):
    """Nothing in the payload can be stored: answer 400 with these problems."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(slots=True)
class Parsed:
    batch: IngestBatch
    problems: list[str] = field(default_factory=list)  # alerts rejected individually


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _PostableAlert(_Model):
    labels: dict[StrictStr, StrictStr]
    annotations: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    starts_at: Rfc3339 | None = Field(None, alias="startsAt")
    ends_at: Rfc3339 | None = Field(None, alias="endsAt")
    generator_url: StrictStr = Field("", alias="generatorURL")


class _WebhookAlert(_PostableAlert):
    status: Literal["firing", "resolved"]
    starts_at: Rfc3339 = Field(alias="startsAt")  # required in a webhook
    fingerprint: StrictStr | None = None


class _WebhookEnvelope(_Model):
    version: StrictStr
    group_key: StrictStr = Field("", alias="groupKey")
    truncated_alerts: StrictInt = Field(0, alias="truncatedAlerts", ge=0, le=MAX_TRUNCATED)
    status: Literal["firing", "resolved"] | None = None
    receiver: StrictStr = Field("", max_length=MAX_RECEIVER)
    external_url: StrictStr = Field("", alias="externalURL")
    alerts: list[Any]


_STATUSES = {s.value: s for s in AlertStatus}
_POSTABLE_FIELDS = frozenset({"labels", "annotations", "startsAt", "endsAt", "generatorURL"})


def _load_json(body: bytes) -> Any:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:  # also what invalid UTF-8 raises
        raise PayloadError([f"invalid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"]) from None
    # JSON can only carry U+0000 escaped: a plain byte search keeps the common case free.
    if b"\\u0000" not in body:
        return data
    try:
        return _without_nul(data)
    except RecursionError:
        raise PayloadError([_TOO_DEEP]) from None


def _without_nul(value: Any) -> Any:
    """Every U+0000 in the payload's strings (label names and values, annotations, generatorURL,
    groupKey...) replaced by U+FFFD, the replacement character.

    PostgreSQL's text and jsonb cannot hold U+0000: storing such an alert failed, and the 503 that
    followed would be retried by Alertmanager for ever, failing every payload that shared its commit.
    Both stores keep the same replaced text. A webhook keeps the fingerprint Alertmanager sent; an
    API v2 alert's is computed from the replaced labels."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def _errors(exc: ValidationError, prefix: str) -> list[str]:
    out = []
    for err in exc.errors(include_url=False):
        loc = format_loc((prefix, *err["loc"])) if prefix else format_loc(err["loc"])
        out.append(f"{loc}: {err['msg']}")
    return out


def _digest(source: str, data: Any) -> str:
    try:
        return payload_digest(source, data)
    except TypeError:  # orjson's "Recursion limit reached" (it parses deeper than it serialises)
        raise PayloadError([_TOO_DEEP]) from None


def _zero_is_none(value: datetime | None) -> datetime | None:
    """Go's zero time (`0001-01-01T00:00:00Z`) means "not set" in Alertmanager payloads."""
    return None if value is None or value.year <= 1 else value


def _check_alert(labels: dict[str, str], annotations: dict[str, str], generator_url: str, where: str) -> str | None:
    """The first problem with an alert's labels, annotations or generatorURL (see `limits`).

    As in Alertmanager, any label set with at least one label is an alert: no label is required
    (not even `alertname`) and a label name is any non-empty UTF-8 (`service.name`, `k8s.pod.name`);
    JSON cannot carry invalid UTF-8 here (the decoder refuses it and lone surrogates)."""
    if not labels:
        return f"{where}.labels: at least one label pair required"
    if "" in labels:
        return f"{where}.labels: empty label name"
    if bad := check_mapping(labels, f"{where}.labels", most=MAX_LABELS, longest_value=MAX_LABEL_VALUE):
        return bad
    if len(alertname := labels.get("alertname", "")) > MAX_ALERTNAME:
        return f"{where}.labels.alertname: {len(alertname)} characters, at most {MAX_ALERTNAME}"
    if bad := check_mapping(
        annotations, f"{where}.annotations", most=MAX_ANNOTATIONS, longest_value=MAX_ANNOTATION_VALUE
    ):
        return bad
    if len(generator_url) > MAX_GENERATOR_URL:
        return f"{where}.generatorURL: {len(generator_url)} characters, at most {MAX_GENERATOR_URL}"
    return None


def _instant(value: datetime | None, where: str, problems: list[str]) -> datetime | None:
    """`value` normalised to UTC (None stays None); a problem is appended when it is out of limits."""
    if value is None:
        return None
    checked = check_instant(value, where)
    if isinstance(checked, str):
        problems.append(checked)
        return None
    return checked


def _checked(model: type[_PostableAlert], raw: Any, where: str, problems: list[str]) -> Checked | None:
    """One alert of either shape through the boundary: its fields, its labels (empty values dropped),
    and its times in UTC (None where not set); None, with the problem appended, when it is refused."""
    try:
        a = model.model_validate(raw)
    except ValidationError as exc:
        problems.extend(_errors(exc, where))
        return None
    labels = non_empty(a.labels)
    if bad := _check_alert(labels, a.annotations, a.generator_url, where):
        problems.append(bad)
        return None
    found = len(problems)
    starts_at = _instant(_zero_is_none(a.starts_at), f"{where}.startsAt", problems)
    ends_at = _instant(_zero_is_none(a.ends_at), f"{where}.endsAt", problems)
    if len(problems) > found:
        return None
    return a, labels, starts_at, ends_at


def _fingerprint(given: str | None, labels: dict[str, str]) -> str:
    if given and len(given) == 16 and _FINGERPRINT_CHARS.issuperset(given):
        return given
    return label_fingerprint(labels)


def parse_webhook(body: bytes, known_digest: bytes | None = None, *, at_once: bool = True) -> Parsed:
    """`known_digest`: the body's `body_digest` when the caller already computed it. `at_once`: False
    checks alert by alert only (the tests hold both ways equal)."""
    data = _load_json(body)
    if not isinstance(data, dict):
        raise PayloadError([f"body: expected a JSON object (Alertmanager webhook), got {type(data).__name__}"])
    try:
        env = _WebhookEnvelope.model_validate(data)
    except ValidationError as exc:
        raise PayloadError(_errors(exc, "")) from None
    if env.version != WEBHOOK_VERSION:
        raise PayloadError([f"version: unsupported webhook version {env.version!r} (expected {WEBHOOK_VERSION!r})"])

    alerts: list[IncomingAlert] = []
    problems: list[str] = []
    checked_alerts: Iterable[Checked | None] = (decode.webhook_alerts(env.alerts) if at_once else None) or (
        _checked(_WebhookAlert, raw, f"alerts[{i}]", problems) for i, raw in enumerate(env.alerts)
    )
    for i, checked in enumerate(checked_alerts):
        if checked is None:
            continue
        a, labels, starts_at, ends_at = checked
        if starts_at is None:
            problems.append(f"alerts[{i}].startsAt: not set (Go's zero time)")
            continue
        if ends_at is not None and ends_at < starts_at:
            problems.append(f"alerts[{i}].endsAt: before startsAt")
            continue
        alerts.append(
            IncomingAlert(
                fingerprint=_fingerprint(a.fingerprint, labels),
                labels=labels,
                annotations=a.annotations,
                status=_STATUSES[a.status],
                starts_at=starts_at,
                ends_at=ends_at,
                generator_url=a.generator_url,
            )
        )
    if env.alerts and not alerts:
        raise PayloadError(problems)
    identity = {k: v for k, v in data.items() if k != "externalURL"}
    batch = IngestBatch(
        source="webhook",
        known_digest=_digest("webhook", identity),
        body=body.decode("utf-8", errors="replace"),
        alerts=alerts,
        receiver=env.receiver,
        group_key=env.group_key,
        status=env.status,
        external_url=env.external_url,
        truncated_alerts=env.truncated_alerts,
        rejected_alerts=len(env.alerts) - len(alerts),
        # Only a payload answered plainly 200 (no alert refused, none cut by Alertmanager) may skip the parse.
        body_digest=None if problems or env.truncated_alerts else known_digest or body_digest(body),
    )
    return Parsed(batch, problems)


def parse_api_v2(body: bytes, *, now: datetime, at_once: bool = True) -> Parsed:
    """Alertmanager's `POST /api/v2/alerts`: no `startsAt` means now, no `endsAt` means now + 5m,
    and an alert whose `endsAt` has passed is resolved. `at_once`: as in `parse_webhook`."""
    problems: list[str] = []
    checked_alerts: Iterable[Checked | None]
    if at_once and (decoded := decode.pushes(body)) is not None:  # every alert passed, with Prometheus's fields
        data, sent, checked_alerts = None, len(decoded), decoded
    else:
        data = _load_json(body)
        if not isinstance(data, list):
            raise PayloadError([f"body: expected a JSON array of alerts, got {type(data).__name__}"])
        sent = len(data)
        checked_alerts = (_checked(_PostableAlert, raw, f"[{i}]", problems) for i, raw in enumerate(data))
    valid: list[tuple[Fields, dict[str, str], datetime, datetime]] = []
    for i, checked in enumerate(checked_alerts):
        if checked is None:
            continue
        a, labels, given_start, given_end = checked
        starts_at = given_start or now
        ends_at = given_end or max(now, starts_at) + API_V2_DEFAULT_TTL
        if ends_at < starts_at:
            problems.append(f"[{i}].endsAt: before startsAt")
            continue
        valid.append((a, labels, starts_at, ends_at))
    if sent and not valid:
        raise PayloadError(problems)
    # No fingerprint is sent on this endpoint: compute them together (much cheaper for new label sets).
    prints = label_fingerprints([labels for _, labels, _, _ in valid])
    alerts = [
        IncomingAlert(
            fingerprint=fp,
            labels=labels,
            annotations=a.annotations,
            status=AlertStatus.RESOLVED if ends_at <= now else AlertStatus.FIRING,
            starts_at=starts_at,
            ends_at=ends_at,
            generator_url=a.generator_url,
        )
        for fp, (a, labels, starts_at, ends_at) in zip(prints, valid, strict=True)
    ]
    batch = IngestBatch(
        source="api_v2",
        body=body.decode("utf-8", errors="replace"),
        alerts=alerts,
        rejected_alerts=sent - len(alerts),
        # Alerts of only the fields validated here (Prometheus's) are a few levels deep: their digest
        # cannot fail and waits until the push is logged (read from the body then, when it was decoded at
        # once). Any other payload may be nested too deeply for it: computed now, to answer 400.
        known_digest=(
            None
            if data is None or (not problems and all(map(_POSTABLE_FIELDS.issuperset, data)))
            else _digest("api_v2", data)
        ),
        identity=data,
    )
    return Parsed(batch, problems)
