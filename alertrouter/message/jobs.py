"""The words of a job-impact message (`engine.jobs` makes it): `ml-train/llm-pretrain (on 32 nodes): 3 nodes
down, 24 GPUs lost` in the receiver's language, from the figures the message carries as labels of its
own alert, as the heartbeat's are (the stored English headline is kept for a reader without them)."""

from __future__ import annotations

from collections.abc import Mapping
from gettext import NullTranslations

__all__ = ["JOB_ALERTNAME", "JOB_DOWN", "JOB_GPUS", "JOB_LABEL", "JOB_NODES", "job_headline", "job_text"]

JOB_ALERTNAME = "AlertrouterJobImpact"
JOB_LABEL = "alertrouter_job"  # the job's key, `namespace/name`
JOB_DOWN, JOB_GPUS, JOB_NODES = "nodes_down", "gpus_lost", "job_nodes"  # its figures, as decimal text


def _number(labels: Mapping[str, str], name: str) -> int:
    value = labels.get(name, "")
    return int(value) if value.isascii() and value.isdigit() and len(value) < 10 else 0


def job_headline(tr: NullTranslations, labels: Mapping[str, str]) -> str:
    """`ml-train/llm-pretrain (on 32 nodes): 3 nodes down, 24 GPUs lost`; without nodes down, `...: 2 GPUs
    lost`; without the job's size, no `(on N nodes)`. "" for labels that are not a job message's."""
    job = labels.get(JOB_LABEL, "")
    if not job:
        return ""
    down, gpus, size = _number(labels, JOB_DOWN), _number(labels, JOB_GPUS), _number(labels, JOB_NODES)
    if size:
        job = tr.ngettext("%(job)s (on %(nodes)s node)", "%(job)s (on %(nodes)s nodes)", size) % {
            "job": job,
            "nodes": size,
        }
    lost = tr.ngettext("%(gpus)s GPU lost", "%(gpus)s GPUs lost", gpus) % {"gpus": gpus}
    if down:
        downs = tr.ngettext("%(down)s node down", "%(down)s nodes down", down) % {"down": down}
        return tr.gettext("%(job)s: %(down)s, %(lost)s") % {"job": job, "down": downs, "lost": lost}
    return tr.gettext("%(job)s: %(lost)s") % {"job": job, "lost": lost}


def job_text(tr: NullTranslations, labels: Mapping[str, str], since: str) -> str:
    """The headline and since when: `ml-train/llm-pretrain (on 32 nodes): 3 nodes down, 24 GPUs lost, since
    03:12 CST` (`since` the local time of the first alert hitting it)."""
    return tr.gettext("%(what)s, since %(since)s") % {"what": job_headline(tr, labels), "since": since}
