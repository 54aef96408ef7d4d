"""Job-impact messages (`engine.jobs.job_intents`, `message.jobs`): one per job hit, to the receiver of its
namespace, an update only when it lost more GPUs than it ever had, and the words in zh-CN and en."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alertrouter.engine.jobs import job_intents
from alertrouter.jobs.routes import JobRoutes
from alertrouter.message.i18n import translations
from alertrouter.message.jobs import job_headline, job_text
from alertrouter.message.phrases import headline
from alertrouter.store.jobs import HitChange
from alertrouter.store.tables.jobs import JobHitRow

T0 = datetime(2026, 12, 8, 3, 12, tzinfo=UTC)
ROUTES = JobRoutes({"ml-train": "ml-oncall"}, default_receiver=None)


def row(namespace: str = "ml-train", down: int = 3, gpus: int = 24, resolved: bool = False) -> JobHitRow:
    return JobHitRow(
        id=7, namespace=namespace, name="llm-pretrain", source="lookup", detail="kube_pod_owner PyTorchJob", note="",
        since=T0, opened_at=T0, updated_at=T0, resolved_at=T0 + timedelta(hours=1) if resolved else None,
        nodes=[], nodes_down=[], incidents=[], node_count=down, down_count=down, gpus_lost=gpus, peak_gpus_lost=gpus,
        alerts=down, job_nodes=32, gpu_seconds=0.0,
    )  # fmt: skip


def test_one_message_per_job_to_its_namespaces_receiver_updates_only_when_it_lost_more() -> None:
    changes = [
        HitChange("opened", row()),
        HitChange("opened", row(namespace="research")),  # no receiver for research, no default: no message
        HitChange("updated", row(down=2, gpus=16)),  # fewer than ever: not told
        HitChange("updated", row(down=4, gpus=32), grew=True),
        HitChange("resolved", row(resolved=True)),
    ]
    intents = job_intents(changes, ROUTES, T0)
    assert [(i.incident, i.receiver, i.reason.value) for i in intents] == [
        ("job:ml-train/llm-pretrain", "ml-oncall", "first"),
        ("job:ml-train/llm-pretrain", "ml-oncall", "grew"),
        ("job:ml-train/llm-pretrain", "ml-oncall", "resolved"),
    ]
    first = intents[0].message
    assert first.headline == "ml-train/llm-pretrain (on 32 nodes): 3 nodes down, 24 GPUs lost"
    assert (first.severity, first.started_at, first.alerts[0].firing) == ("critical", T0, True)
    assert intents[2].message.resolved
    default = JobRoutes({}, default_receiver="ml-platform")
    assert [i.receiver for i in job_intents([HitChange("opened", row(namespace=""))], default, T0)] == ["ml-platform"]


def test_the_words_in_both_languages() -> None:
    message = job_intents([HitChange("opened", row())], ROUTES, T0)[0].message
    zh, en = translations("zh-CN"), translations("en")
    assert headline(en, message) == "ml-train/llm-pretrain (on 32 nodes): 3 nodes down, 24 GPUs lost"
    assert headline(zh, message) == "ml-train/llm-pretrain（共 32 个节点）：3 个节点宕机，损失 24 块 GPU"
    labels = message.labels
    assert (
        job_text(zh, labels, "11:12 CST")
        == "ml-train/llm-pretrain（共 32 个节点）：3 个节点宕机，损失 24 块 GPU，开始于 11:12 CST"
    )
    one = {**labels, "nodes_down": "0", "gpus_lost": "1", "job_nodes": "0"}
    assert job_headline(en, one) == "ml-train/llm-pretrain: 1 GPU lost"
    assert job_headline(en, {"alertname": "Other"}) == ""
    assert (
        job_headline(en, {**labels, "gpus_lost": "9" * 40})
        == "ml-train/llm-pretrain (on 32 nodes): 3 nodes down, 0 GPUs lost"
    )
