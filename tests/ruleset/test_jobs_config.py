"""The `jobs:` section (ruleset/jobs.py): the shipped file equals the defaults, a table of one's own, and
problems named by file and path."""

from __future__ import annotations

from pathlib import Path

import pytest

from alertrouter.cli.main import main
from alertrouter.jobs.identity import JobNaming
from alertrouter.jobs.impact import ImpactRules
from alertrouter.labels import parse_matchers
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.jobs import DEFAULT_NODE_DOWN, impact_rules, job_naming
from support.scenario import REPO

ROUTE = "route: {receiver: r}\nreceivers: [{name: r}, {name: ml-oncall}]\n"


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_ruleset(path, {})
    return [str(p) for p in info.value.problems]


def test_the_shipped_file_writes_out_the_defaults() -> None:
    jobs = load_ruleset(REPO / "rules", {}).jobs
    assert jobs is not None
    assert job_naming(jobs) == JobNaming()
    assert impact_rules(jobs) == ImpactRules(JobNaming(), tuple(parse_matchers(DEFAULT_NODE_DOWN)), 8)
    assert jobs.namespaces == {}
    assert jobs.default_receiver is None


def test_without_the_section_there_are_no_jobs(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text(ROUTE)
    assert load_ruleset(tmp_path, {}).jobs is None


def test_a_table_of_ones_own(tmp_path: Path) -> None:
    text = "jobs:\n  namespaces: {ml-train: ml-oncall}\n  default_receiver: r\n  labels: [slurm_job]\n"
    (tmp_path / "a.yml").write_text(ROUTE + text)
    jobs = load_ruleset(tmp_path, {}).jobs
    assert jobs is not None
    assert (jobs.namespaces, jobs.default_receiver) == ({"ml-train": "ml-oncall"}, "r")
    assert job_naming(jobs).alert_labels == ("slurm_job",)


@pytest.mark.parametrize(
    ("section", "path", "words"),
    [
        ("{labels: [training.kubeflow.org/job-name]}", "jobs.labels", "is not a Prometheus label name"),
        ("{pod_labels: [volcano_sh_job_name]}", "jobs.pod_labels", "kube_pod_labels names start with 'label_'"),
        ("{job_kinds: [pytorchjob]}", "jobs.job_kinds", "is not a Kubernetes kind"),
        ("{namespaces: {ML_Train: r}}", "jobs.namespaces", "is not a Kubernetes namespace"),
        ("{namespaces: {ml-train: nobody}}", "jobs.namespaces.ml-train", "undefined receiver 'nobody'"),
        ("{default_receiver: nobody}", "jobs.default_receiver", "undefined receiver 'nobody' (known: ml-oncall, r)"),
        ("{namespaces: {ml-train: ''}}", "jobs.namespaces.ml-train", "at least 1 character"),
        ("{pod_name: false}", "jobs.pod_name", "unknown key"),
        ("{pod_names: maybe}", "jobs.pod_names", "valid boolean"),
        ("{severity: page}", "jobs.severity", "'page' is not one of global.severities (critical, warning, info)"),
        ("{gpus_per_node: -1}", "jobs.gpus_per_node", "greater than or equal to 0"),
        ("{node_down: ['alertname=~\"(\"']}", "jobs.node_down", "missing"),
    ],
)
def test_problems_name_the_file_and_path(tmp_path: Path, section: str, path: str, words: str) -> None:
    f = tmp_path / "jobs.yml"
    (tmp_path / "a.yml").write_text(ROUTE)
    f.write_text(f"jobs: {section}\n")
    found = problems(tmp_path)
    assert found
    assert all(p.startswith(f"{f}:{path}") for p in found), found
    assert any(words in p for p in found), found


def test_check_config_names_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "a.yml"
    f.write_text(ROUTE + "jobs:\n  namespaces: {ml-train: nobody}\n")
    assert main(["check-config", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert f"{f}:jobs.namespaces.ml-train: undefined receiver 'nobody' (known: ml-oncall, r)" in out.out + out.err
