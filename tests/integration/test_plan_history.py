"""A report tells its plan's history: a plan amended after runs shows the verdicts under both versions, records not
made under the plan and runs reused from other studies are named in its banner (render/plan.py,
render/amendments.py, analyse/amendments.py), and the learning rules are a plan field (plan/analysis_plan.py)."""

import json

import pytest

from sb3_ablation.common.io import read_json
from sb3_ablation.study import write_report
from sb3_ablation.study.analyse.provenance import record_digest
from sb3_ablation.study.analyse.report import analyse_study
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, LearningRules, PlanError
from sb3_ablation.study.plan.config import StudyConfig, StudyError
from sb3_ablation.study.render.amendments import TITLE
from sb3_ablation.study.render.plan import plan_banner, plan_provenance_json
from sb3_ablation.study.store.manifest import open_manifest, read_manifest
from sb3_ablation.study.store.runs import run_path, write_run

REPS = 200
SEEDS = range(10)
RESOLVED = {"Pendulum-v1": {"ablatable_td3": {"n_timesteps": 20000, "gamma": 0.98}}}
VARIANTS = ["td3", "no_replay_buffer", "no_clipped_double_q"]


def final_return(variant: str, seed: int) -> float:
    """
    td3; no_replay_buffer far worse; no_clipped_double_q within ±1.1 of td3 (equivalent at Pendulum's 53.35 margin),
    each seed's difference of its own size (tied sizes would send the Wilcoxon test to scipy's slow permutations).
    """
    if variant == "no_replay_buffer":
        return -1500.0 + 7 * seed
    difference = (1.0 + seed / 100) * (1.0 if seed % 2 else -1.0)
    return -150.0 - 3 * seed + (0.0 if variant == "td3" else difference)


def write_record(out, variant, seed, **fields):
    """A finished run's record (format 3) whose returns end at :func:`final_return`."""
    final = final_return(variant, seed)
    record = {
        "format": 3, "env": "Pendulum-v1", "variant": variant, "seed": seed, "status": "ok", "error": None,
        "evaluations": {
            "timesteps": [0, 10000, 20000], "mean_return": [final - 100.0, final - 50.0, final],
            "std_return": [1.0] * 3, "mean_q": [1.0] * 3, "mean_discounted_return": [0.0] * 3,
            "overestimation": [1.0] * 3, "episode_returns": [[final - 100.0], [final - 50.0], [final]],
        },
        "warnings": [],
        **fields,
    }  # fmt: skip
    path = run_path(out, "Pendulum-v1", variant, seed)
    write_run(path, record)
    return path


def config(out, **changes) -> StudyConfig:
    return StudyConfig(**{"envs": ["Pendulum-v1"], "variants": VARIANTS, "seeds": 10, "out": str(out), **changes})


def test_a_plan_amended_after_runs_shows_the_verdicts_under_both_plans(tmp_path):
    # declared with a margin too tight for any equivalence; amended, once every run had finished, to the default
    tight = {"margins": {"Pendulum-v1": 0.5}}
    digest = open_manifest(config(tmp_path, analysis=tight), RESOLVED, {})["analysis_declared"]["digest"]
    for variant in VARIANTS:
        for seed in SEEDS:
            write_record(tmp_path, variant, seed, plan_digest=digest, finished_at="2099-01-01T00:00:00+0000")
    with pytest.raises(StudyError, match="declare the change as an amendment"):
        open_manifest(config(tmp_path), RESOLVED, {})
    open_manifest(config(tmp_path, amend_plan="the margin of the task's references"), RESOLVED, {})

    model = analyse_study(tmp_path, reps=REPS)
    declared, amended = model.plan_versions
    assert declared.plan.margins == {"Pendulum-v1": 0.5} and amended.plan.margins == {}
    assert amended.finished_runs == 30 and amended.reason == "the margin of the task's references"
    assert declared.verdicts["Pendulum-v1"]["final_window"]["no_clipped_double_q"][0] == "unresolved"
    assert amended.verdicts["Pendulum-v1"]["final_window"]["no_clipped_double_q"][0] == "equivalent"
    # the removal that differs, differs under both
    assert {v.verdicts["Pendulum-v1"]["final_window"]["no_replay_buffer"][0] for v in model.plan_versions} == {"differs"}
    # the model's own verdicts follow the plan in force
    primary = model.envs[0].outcome("final_window")
    assert primary.comparisons["no_clipped_double_q"].verdict == "equivalent"

    text = write_report(tmp_path, reps=REPS).read_text()
    top = text.split("## Analysis plan")[0]
    # the study command's own config leaves the learning rules out: no "later invocation" with another plan
    assert "A later invocation gave another plan" not in text and "learning rules: declared in the plan" in text
    assert "**The plan was amended after 30 runs had finished**" in top and "the margin of the task's references" in top
    section = text.split(f"## {TITLE}")[1]
    assert "| no_clipped_double_q | unresolved (" in section
    assert "| cannot tell: both arms solve the task at this budget (" in section  # the amended plan's equivalent, at ceiling
    assert "margins {'Pendulum-v1': 0.5} -> {}" in section
    sections = read_json(tmp_path / "report.json")["sections"]
    assert sections[TITLE]["differing"]["Pendulum-v1"]["final_window"] == ["no_clipped_double_q"]
    assert [v["index"] for v in sections[TITLE]["versions"]] == [0, 1]


def test_a_plan_amended_before_any_run_has_no_side_by_side_section(tmp_path):
    open_manifest(config(tmp_path, analysis={"margins": {"Pendulum-v1": 0.5}}), RESOLVED, {})
    digest = open_manifest(config(tmp_path), RESOLVED, {})["analysis_declared"]["digest"]  # declared anew
    for variant in VARIANTS:
        for seed in SEEDS:
            write_record(tmp_path, variant, seed, plan_digest=digest, finished_at="2099-01-01T00:00:00+0000")
    model = analyse_study(tmp_path, reps=REPS)
    assert model.plan_versions == [] and plan_banner(model) == []
    assert model.provenance.clean


def test_the_banner_names_reused_records_records_from_before_the_plan_and_group_dependent_ones(tmp_path):
    digest = open_manifest(config(tmp_path), RESOLVED, {})["analysis_declared"]["digest"]
    manifest = read_manifest(tmp_path)
    manifest["analysis_declared"]["at"] = "2026-11-25T10:00:00+0000"
    manifest["reused"] = [{
        "from": "docs/studies/source", "how": "reproduced", "note": "run again with that study's seeds",
        "runs": [["Pendulum-v1", "td3", 0], ["Pendulum-v1", "td3", 1]],
    }]  # fmt: skip
    (tmp_path / "study.json").write_text(json.dumps(manifest))
    paths = {}
    for variant in VARIANTS:
        for seed in SEEDS:
            fields = {"plan_digest": digest, "finished_at": "2026-11-25T11:00:00+0000"}
            if (variant, seed) == ("td3", 0):  # the group-dependent engine, before digests and before the plan
                fields = {"engine": "batched", "finished_at": "2026-11-25T09:00:00+0000"}
            if (variant, seed) == ("td3", 2):  # another plan's digest
                fields["plan_digest"] = "f" * 64
            paths[(variant, seed)] = write_record(tmp_path, variant, seed, **fields)

    model = analyse_study(tmp_path, reps=REPS)
    banner = "\n".join(plan_banner(model))
    assert "**1 of the 30 records carries no plan digest**" in banner and "(Pendulum-v1 td3 (seeds 0))" in banner
    assert "**1 record made under another plan" in banner and "Pendulum-v1 td3 (seeds 2)" in banner
    assert "**1 record finished before the plan was declared:** Pendulum-v1 td3 (seeds 0)." in banner
    assert "**2 runs reused from `docs/studies/source`** (run again with the same settings and seeds" in banner
    assert "Run again with that study's seeds." in banner
    assert "cannot be reproduced record by record: their batched group set their random streams" in banner
    facts = plan_provenance_json(model)
    assert facts["without_digest"] == [["Pendulum-v1", "td3", 0]] and facts["group_dependent"] == [["Pendulum-v1", "td3", 0]]
    assert facts["other_plan"] == [["Pendulum-v1", "td3", 2]] and facts["before_plan"] == [["Pendulum-v1", "td3", 0]]
    assert [(r["run"][2], r["how"], r["record_digest"]) for r in facts["reused"]] == [
        (0, "reproduced", record_digest(paths[("td3", 0)])),
        (1, "reproduced", record_digest(paths[("td3", 1)])),
    ]
    assert facts["learning_rules"] == {"declared": True, "rules": LearningRules().to_dict()}
    assert facts["banners"] and all(not line.startswith(">") for line in facts["banners"])


def test_learning_rules_are_a_plan_field_declared_with_a_new_study(tmp_path):
    # a plan without them keeps its dict (and so its digest); a new study declares their defaults
    assert "learning" not in AnalysisPlan().to_dict()
    manifest = open_manifest(config(tmp_path / "new"), RESOLVED, {})
    assert manifest["analysis"]["learning"] == LearningRules().to_dict()
    assert AnalysisPlan.from_dict(manifest["analysis"]).learning == LearningRules()
    # a study file sets them under its plan; an unknown key is one line with the closest known one
    own = open_manifest(config(tmp_path / "own", analysis={"learning": {"learning_fraction": 0.2}}), RESOLVED, {})
    assert own["analysis"]["learning"]["learning_fraction"] == 0.2
    with pytest.raises(StudyError, match=r"^learning rules: unknown key 'learnin_fraction' \(did you mean 'learning_fr"):
        config(tmp_path / "bad", analysis={"learning": {"learnin_fraction": 0.2}})
    with pytest.raises(PlanError, match="learning must be a mapping"):
        AnalysisPlan(learning=0.2)
    # resumed by the same study file (which leaves them out): no change; with other rules after runs: refused
    write_record(tmp_path / "new", "td3", 0)
    assert open_manifest(config(tmp_path / "new"), RESOLVED, {})["analysis"]["learning"] == LearningRules().to_dict()
    with pytest.raises(StudyError, match="learning"):
        open_manifest(config(tmp_path / "new", analysis={"learning": {"learning_fraction": 0.2}}), RESOLVED, {})


def test_the_plan_section_says_whether_the_learning_rules_were_declared(tmp_path):
    from sb3_ablation.study.render.plan import _learning_line

    assert "learning rules: declared in the plan" in _learning_line(AnalysisPlan(learning=LearningRules()))
    undeclared = _learning_line(AnalysisPlan())
    assert "the package's defaults, not declared before these runs" in undeclared and "5%" in undeclared
    assert "20%" in _learning_line(AnalysisPlan.from_dict({"learning": {"learning_fraction": 0.2}}))


def test_a_study_from_before_digests_says_its_order_rests_on_dates(tmp_path):
    open_manifest(config(tmp_path), RESOLVED, {})
    manifest = read_manifest(tmp_path)
    del manifest["design"], manifest["analysis_declared"]["digest"], manifest["analysis"]["learning"]
    manifest["analysis_declared"]["note"] = "the plan and the first records were committed together"
    (tmp_path / "study.json").write_text(json.dumps(manifest))
    for variant in VARIANTS:
        for seed in SEEDS:
            write_record(tmp_path, variant, seed, finished_at="2099-01-01T00:00:00+0000")
    model = analyse_study(tmp_path, reps=REPS)
    banner = plan_banner(model)
    assert banner[0] == "> **Plan history:** The plan and the first records were committed together."
    assert "**Neither the plan nor any of the 30 records carries a digest**" in banner[2]
    assert len(banner) == 4 and not plan_provenance_json(model)["learning_rules"]["declared"]
