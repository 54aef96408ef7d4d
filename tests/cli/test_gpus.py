"""`alertrouter gpus [--rma] [--csv]` on both stores: GPUs recorded by ingest, listed from the store of
ALERTROUTER_DATABASE_URL with the RMA verdicts of the rules, the CSV read back field by field."""

from __future__ import annotations

import asyncio
import csv
import io
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from alertrouter.cli.main import main
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.store import Database
from support.scenario import dcgm_labels
from support.webhooks import webhook

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
LEMON = dcgm_labels("10.0.0.7", "gpu-node-07", 3, xid="48", serial="1654922007563")
APP_FAULT = dcgm_labels("10.0.0.8", "gpu-node-08", 0, xid="13")


@pytest.fixture
def store(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The test store holding two GPUs' events (a lemon: Xid 48 twice, 11 days apart; an application fault)
    and the shipped rules; the logging set up by the command is undone after."""

    async def record() -> None:
        db = Database(database_url)
        try:
            ingestor = Ingestor(db, TouchBuffer())
            for body in (
                webhook([LEMON, APP_FAULT], starts_at=T0),
                webhook([LEMON], status="resolved", starts_at=T0, ends_at=T0 + timedelta(minutes=20)),
                webhook([LEMON], starts_at=T0 + timedelta(days=11, hours=6)),
            ):
                await ingestor.ingest(parse_webhook(body).batch)
        finally:
            await db.dispose()

    asyncio.run(record())
    monkeypatch.setenv("ALERTROUTER_DATABASE_URL", database_url)
    monkeypatch.setenv("ALERTROUTER_CONFIG", str(REPO / "rules"))
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield database_url
    root.handlers[:] = handlers
    root.setLevel(level)


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_rma_csv_field_by_field(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "--rma", "--csv"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "uuid,serial,model,node,slot,pci_bus_id,event_count,events,rma_rule,reason"
    (row,) = _csv(out)
    assert row == {
        "uuid": "GPU-gpu-node-07-3",
        "serial": "1654922007563",
        "model": "NVIDIA H100 80GB HBM3",
        "node": "gpu-node-07",
        "slot": "3",
        "pci_bus_id": "00000000:1B:00.0",
        "event_count": "2",
        "events": "48@2026-11-20T08:00:00Z;48@2026-12-01T14:00:00Z",
        "rma_rule": "dbe-repeated",
        "reason": "Xid 48 twice in 11 days (rule dbe-repeated)",
    }


def test_every_gpu_without_rma(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "--csv"]) == 0
    rows = _csv(capsys.readouterr().out)
    assert [(r["uuid"], r["node"], r["event_count"], r["events"], r["rma_rule"], r["reason"]) for r in rows] == [
        (
            "GPU-gpu-node-07-3",
            "gpu-node-07",
            "2",
            "48@2026-11-20T08:00:00Z;48@2026-12-01T14:00:00Z",
            "dbe-repeated",
            "Xid 48 twice in 11 days (rule dbe-repeated)",
        ),
        ("GPU-gpu-node-08-0", "gpu-node-08", "1", "13@2026-11-20T08:00:00Z", "", ""),
    ]


def test_the_table(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "--rma"]) == 0
    assert capsys.readouterr().out == (
        "GPU-gpu-node-07-3  gpu-node-07 GPU 3  NVIDIA H100 80GB HBM3  2 events  "
        "RMA candidate: Xid 48 twice in 11 days (rule dbe-repeated)\n"
    )


def test_rules_of_ones_own_decide(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rma.yml").write_text(
        "route: {receiver: r}\nreceivers: [{name: r}]\n"
        "rma:\n  rules:\n    - {name: app-faults, xids: [13], count: 1, window: 1d}\n"
    )
    assert main(["gpus", "--rma", "--csv", "--config", str(tmp_path)]) == 0
    rows = _csv(capsys.readouterr().out)
    assert [(r["uuid"], r["reason"]) for r in rows] == [("GPU-gpu-node-08-0", "Xid 13 once (rule app-faults)")]


def test_a_bad_rules_file_is_named(store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rma.yml").write_text("rma:\n  rules:\n    - {name: a, xids: [48], count: 2, window: 30}\n")
    assert main(["gpus", "--config", str(tmp_path)]) == 2
    assert f"{tmp_path / 'rma.yml'}:rma.rules[0].window" in capsys.readouterr().err


def test_help_explains(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["gpus", "--help"])
    text = capsys.readouterr().out
    assert "the CSV an RMA form asks for" in text
    assert "uuid, serial, model, node, slot, pci_bus_id, event_count, events" in text
