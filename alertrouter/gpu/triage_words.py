"""The words of a node incident's GPU triage (`message.gpu_triage.GpuTriageFacts`) in the receiver's
language: `GPU 3: Xid 79 (GPU has fallen off the bus) — reboot the node; 7 other GPUs reported Xid 45 as a
consequence`, and the verdict with its reason: `the same Xid 48 5 times in 24 h on this GPU: hardware`,
`Xid 13 on 8 GPUs of workload ml/train: the application`. The meaning comes from the catalog in the
receiver's language; one the catalog no longer lists keeps the stored English words."""

from __future__ import annotations

from gettext import NullTranslations

from alertrouter.gpu.xid import action_text, lookup, meaning_text
from alertrouter.message.gpu_triage import FollowOnFacts, GpuTriageFacts, ReasonFacts

__all__ = ["triage_lines"]


def triage_lines(tr: NullTranslations, language: str, facts: GpuTriageFacts) -> tuple[str, ...]:
    """The root line, then the verdict's line when there is one."""
    root = _root(tr, language, facts)
    if facts.follow_ons:
        joined = tr.gettext(", ").join(_follow_on(tr, f) for f in facts.follow_ons)
        root = tr.gettext("%(root)s; %(follow_ons)s") % {"root": root, "follow_ons": joined}
    verdict = _verdict(tr, facts.reason) if facts.reason is not None else ""
    return (root, verdict) if verdict else (root,)


def _root(tr: NullTranslations, language: str, facts: GpuTriageFacts) -> str:
    info = lookup(facts.xid)
    meaning = (meaning_text(info, language) if info.known else "") or facts.meaning or tr.gettext("unknown XID")
    values = {"gpu": facts.gpu, "xid": facts.xid, "meaning": meaning, "action": action_text(tr, facts.action_class)}
    if facts.gpu:
        return tr.gettext("GPU %(gpu)s: Xid %(xid)s (%(meaning)s) — %(action)s") % values
    return tr.gettext("Xid %(xid)s (%(meaning)s) — %(action)s") % values


def _follow_on(tr: NullTranslations, f: FollowOnFacts) -> str:
    """`7 other GPUs reported Xid 45 as a consequence`; on the root's own GPU only: `Xid 45 followed`."""
    if not f.gpus:
        return tr.gettext("Xid %(xid)s followed as a consequence") % {"xid": f.xid}
    text = tr.ngettext(
        "%(num)s other GPU reported Xid %(xid)s as a consequence",
        "%(num)s other GPUs reported Xid %(xid)s as a consequence",
        f.gpus,
    )
    return text % {"num": f.gpus, "xid": f.xid}


def _window(tr: NullTranslations, seconds: int) -> str:
    """`24 h`, `30 min`: the rule's window, in whole hours when it is some."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return tr.gettext("%(n)s h") % {"n": seconds // 3600}
    return tr.gettext("%(n)s min") % {"n": max(1, seconds // 60)}


def _verdict(tr: NullTranslations, reason: ReasonFacts) -> str:
    values = {"xid": reason.xid, "count": reason.count, "gpus": reason.gpus, "workload": reason.workload}
    values["window"] = _window(tr, reason.window_seconds)
    if reason.rule == "repeated_fatal":
        return tr.gettext("the same Xid %(xid)s %(count)s times in %(window)s on this GPU: hardware") % values
    if reason.rule == "repeated_on_gpu":
        return (
            tr.gettext(
                "the same Xid %(xid)s %(count)s times in %(window)s on this GPU: hardware (run the GPU diagnostics)"
            )
            % values
        )
    if reason.rule == "across_gpus":
        if reason.workload:
            return tr.gettext("Xid %(xid)s on %(gpus)s GPUs of workload %(workload)s: the application") % values
        return tr.gettext("Xid %(xid)s on %(gpus)s GPUs: the application") % values
    return ""
