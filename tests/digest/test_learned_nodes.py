"""The digest names nodes as the engine does, learned aliases included: a node-exporter alert scraped
by IP counts for the node a dcgm-exporter alert taught, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from alertrouter.digest.send import DigestRunner
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.schedule import zone
from alertrouter.store import Database
from support.digestweek import WeekDriver
from support.scenario import dcgm_labels, node_exporter_down_labels

from .test_content import REPO, WEEK


async def test_noisiest_nodes_use_learned_aliases(db: Database) -> None:
    ruleset = load_ruleset(REPO / "rules", {})
    pipeline = compile_rules(ruleset)
    week = WeekDriver(db, pipeline, datetime(2026, 11, 18, 2, 0, tzinfo=UTC))
    await week.fire([node_exporter_down_labels("10.0.0.7"), dcgm_labels("10.0.0.7", "gpu-node-07", 0)])
    await week.settle()
    await week.fire([node_exporter_down_labels("10.0.0.8", alertname="NodeFilesystemReadOnly")])  # never named
    await week.settle()
    runner = DigestRunner(
        db, ruleset, pipeline, templates=Templates(), holder="test", clock=lambda: datetime(2026, 11, 23, 1, tzinfo=UTC)
    )
    stats = await runner.stats(None, WEEK, zone("Asia/Shanghai"))
    assert [(c.name, c.count) for c in stats.noisiest_nodes] == [("gpu-node-07", 2), ("10.0.0.8", 1)]
