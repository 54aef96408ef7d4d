"""Which jobs the firing alerts hit (`jobs.impact`): one entry per job, whatever the number of nodes and
alerts; nodes down, GPUs lost (counted once), since when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alertrouter.jobs.impact import ImpactRules, fold, hits_of, job_nodes
from alertrouter.labels import parse_matchers
from support.jobs import cluster

T0 = datetime(2026, 12, 8, 3, 12, tzinfo=UTC)
RULES = ImpactRules(node_down=tuple(parse_matchers('alertname=~"NodeDown|KubeNodeNotReady"')))


def test_a_storm_over_40_nodes_running_3_jobs_is_3_entries() -> None:
    pods = cluster()
    alerts = [
        ({"alertname": "NodeDown", "instance": f"10.0.0.{n}:9100"}, f"gpu-node-{n:02d}", T0 + timedelta(seconds=n))
        for n in range(40)
    ]
    # GPU alerts from the same nodes before they went dark: their GPUs are the nodes' (counted once)
    alerts += [
        (
            {"alertname": "GPUXidError", "xid": "79", "UUID": f"GPU-{n}", "exported_namespace": "ml-train"}
            | {"exported_pod": f"llm-pretrain-worker-{n}"},
            f"gpu-node-{n:02d}",
            T0 - timedelta(minutes=1),
        )
        for n in range(3)
    ]
    found = fold(
        [hits_of(labels, node, at, RULES, pods) for labels, node, at in alerts], RULES, job_nodes(pods, RULES.naming)
    )
    assert sorted(found) == ["eval/nightly", "ml-train/llm-pretrain", "vc/sweep"]
    llm = found["ml-train/llm-pretrain"]
    assert (llm.down_count, llm.gpus_lost, llm.node_count, llm.job_nodes) == (20, 160, 20, 20)
    assert llm.since == T0 - timedelta(minutes=1)
    assert llm.alerts == 23
    assert llm.job.source == "lookup"
    assert (found["vc/sweep"].down_count, found["vc/sweep"].gpus_lost) == (15, 120)
    assert found["eval/nightly"].nodes_down == tuple(f"gpu-node-{n}" for n in range(35, 40))


def test_gpu_alerts_off_down_nodes_lose_their_gpus_only() -> None:
    pods = cluster()
    alerts = [
        (
            {
                "alertname": "GPUXidError",
                "xid": "48",
                "UUID": f"GPU-{n}-{g}",
                "exported_namespace": "ml-train",
                "exported_pod": f"llm-pretrain-worker-{n}",
            },
            f"gpu-node-{n:02d}",
            T0,
        )
        for n in (4, 5)
        for g in range(3)
    ]
    alerts.append(({"alertname": "NodeDown"}, "gpu-node-05", T0 + timedelta(minutes=2)))
    found = fold([hits_of(labels, node, at, RULES, pods) for labels, node, at in alerts], RULES, {})
    llm = found["ml-train/llm-pretrain"]
    assert (llm.node_count, llm.down_count, llm.gpus_lost) == (2, 1, 8 + 3)
    assert llm.nodes == ("gpu-node-04", "gpu-node-05")


def test_an_alert_naming_no_job_hits_none() -> None:
    assert hits_of({"alertname": "NodeDown"}, "gpu-node-99", T0, RULES, cluster()) == ()  # no pods known there
    assert hits_of({"alertname": "HighLoad"}, "gpu-node-01", T0, RULES, cluster()) == ()
    assert hits_of({"alertname": "NodeDown"}, "gpu-node-01", T0, ImpactRules(), cluster()) == ()  # no node_down


def test_the_best_source_names_the_job_whatever_the_order() -> None:
    pods = cluster()
    by_label = ({"hpc_job": "llm-pretrain", "exported_namespace": "ml-train", "exported_pod": "x"}, "gpu-node-01", T0)
    by_lookup = ({"alertname": "NodeDown"}, "gpu-node-02", T0)
    for alerts in ([by_label, by_lookup], [by_lookup, by_label]):
        found = fold([hits_of(labels, node, at, RULES, pods) for labels, node, at in alerts], RULES, {})
        assert (found["ml-train/llm-pretrain"].job.source, found["ml-train/llm-pretrain"].job.detail) == (
            "label",
            "hpc_job",
        )


def test_the_cause_is_hardware_over_application_over_unknown() -> None:
    pods = cluster()

    def worker(n: int, **labels: str) -> tuple[dict[str, str], str, datetime]:
        pod = {"exported_namespace": "ml-train", "exported_pod": f"llm-pretrain-worker-{n}", "UUID": f"GPU-{n}"}
        return {"alertname": "GPUXidError", **pod, **labels}, f"gpu-node-{n:02d}", T0

    def cause(*alerts: tuple[dict[str, str], str, datetime]) -> str:
        found = fold([hits_of(labels, node, at, RULES, pods) for labels, node, at in alerts], RULES, {})
        return found["ml-train/llm-pretrain"].cause

    assert cause(worker(1, xid="13")) == "application"  # Graphics Engine Exception: the application's
    assert cause(worker(1, xid="13"), worker(2, xid="79")) == "hardware"  # fallen off the bus
    assert cause(worker(1, xid="13"), ({"alertname": "NodeDown"}, "gpu-node-03", T0)) == "hardware"
    assert cause(worker(1, alertname="GPUHighTemp")) == ""
