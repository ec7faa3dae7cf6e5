"""The plan's digest in study.json and in the run records, amendments, and the provenance of a study's records
(sb3_ablation.study.plan.digest, store.manifest, analyse.provenance)."""

import hashlib
import json
import shutil

import pytest

from sb3_ablation.study.analyse.provenance import (
    BEFORE_DIGESTS,
    COPIED,
    EARLIER_VERSION,
    OTHER_PLAN,
    REPRODUCED,
    UNDER_PLAN,
    study_provenance,
)
from sb3_ablation.study.plan.config import StudyConfig, StudyError
from sb3_ablation.study.plan.records import RunRecord, RunTask
from sb3_ablation.study.store.manifest import open_manifest, plan_in_force_digest, plan_versions, read_manifest
from sb3_ablation.study.store.runs import read_run, run_path, write_run

RESOLVED = {"Pendulum-v1": {"ablatable_td3": {"n_timesteps": 300, "gamma": 0.98}}}


def config(out, **changes) -> StudyConfig:
    settings = {"envs": ["Pendulum-v1"], "variants": ["td3", "no_target_networks"], "seeds": 2, "out": str(out)}
    return StudyConfig(**{**settings, **changes})


def write_record(out, variant="td3", seed=0, digest=None, finished_at="2030-01-01T00:00:00+0000", wall=1.0, **entries):
    """A finished run's record as the engines write it, its digest from the task (``entries``: more record entries)."""
    task = RunTask(
        env="Pendulum-v1", variant=variant, seed=seed, algo="ablatable_td3", switches={}, hyperparams={"gamma": 0.98},
        eval_freq=150, eval_episodes=1, plan_digest=digest,
    )  # fmt: skip
    evaluations = {"timesteps": [0, 300], "mean_return": [-1200.0, -900.0 + seed]}
    record = RunRecord.of(task, host="here", status="ok", evaluations=evaluations, wall_time_s=wall, **entries)
    record.finished_at = finished_at
    path = run_path(out, "Pendulum-v1", variant, seed)
    write_run(path, record.to_json())
    return path


def test_the_declared_plan_has_a_digest_anyone_can_recompute(tmp_path):
    manifest = open_manifest(config(tmp_path), RESOLVED, {})
    canonical = json.dumps(
        {"analysis": manifest["analysis"], "design": manifest["design"]},
        sort_keys=True, separators=(",", ":"), ensure_ascii=True,
    )  # fmt: skip
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    assert manifest["analysis_declared"]["digest"] == digest == plan_in_force_digest(manifest)
    assert manifest["design"]["variants"] == ["td3", "no_target_networks"] and "seeds" not in manifest["design"]
    assert manifest["analysis_declared"]["finished_runs"] == 0
    # another plan, another digest
    other = open_manifest(config(tmp_path / "other", analysis={"alpha": 0.1}), RESOLVED, {})
    assert other["analysis_declared"]["digest"] != digest


def test_a_record_carries_the_digest_of_its_task_right_after_the_host(tmp_path):
    path = write_record(tmp_path, digest="abc")
    record = read_run(path)
    assert record["plan_digest"] == "abc" and list(record).index("plan_digest") == list(record).index("host") + 1
    assert "plan_digest" not in read_run(write_record(tmp_path, seed=1))  # a study without a plan writes none


def test_a_plan_edited_before_any_run_is_declared_anew(tmp_path):
    first = open_manifest(config(tmp_path), RESOLVED, {})["analysis_declared"]["digest"]
    manifest = open_manifest(config(tmp_path, analysis={"alpha": 0.1}), RESOLVED, {})
    assert manifest["analysis"]["alpha"] == 0.1 and "amendments" not in manifest
    assert manifest["analysis_declared"]["digest"] not in (None, first)


def test_a_plan_edited_after_runs_is_refused_unless_declared_as_an_amendment(tmp_path):
    declared = open_manifest(config(tmp_path), RESOLVED, {})
    original = declared["analysis_declared"]["digest"]
    write_record(tmp_path, digest=original)
    with pytest.raises(StudyError, match=r"1 runs exist, but this plan differs from it \(alpha 0.05 -> 0.1\)") as error:
        open_manifest(config(tmp_path, analysis={"alpha": 0.1}), RESOLVED, {})
    assert "\n" not in str(error.value) and "--amend-plan" in str(error.value)
    assert read_manifest(tmp_path)["analysis"]["alpha"] == 0.05  # nothing written
    # the same plan resumes
    assert open_manifest(config(tmp_path), RESOLVED, {})["analysis_declared"]["digest"] == original

    amended = open_manifest(config(tmp_path, analysis={"alpha": 0.1}, amend_plan="a wider family"), RESOLVED, {})
    assert amended["analysis"]["alpha"] == 0.1
    (amendment,) = amended["amendments"]
    assert amendment["reason"] == "a wider family" and amendment["changes"] == ["alpha 0.05 -> 0.1"]
    assert amendment["finished_runs"] == 1 and amendment["previous"]["alpha"] == 0.05
    versions = plan_versions(amended)
    assert [v["digest"] for v in versions] == [original, amendment["digest"]] and original != amendment["digest"]
    assert versions[0]["analysis"]["alpha"] == 0.05 and versions[1]["reason"] == "a wider family"
    # resuming under the amended plan adds nothing; the declared one is now a change again
    assert len(open_manifest(config(tmp_path, analysis={"alpha": 0.1}), RESOLVED, {})["amendments"]) == 1
    with pytest.raises(StudyError, match=r"alpha 0\.1 -> 0\.05"):
        open_manifest(config(tmp_path), RESOLVED, {})

    write_record(tmp_path, seed=1, digest=amendment["digest"])
    provenance = study_provenance(tmp_path, others=[])
    assert provenance.verified and provenance.digest == amendment["digest"]
    assert {r.run[2]: (r.status, r.version) for r in provenance.records} == {0: (EARLIER_VERSION, 0), 1: (UNDER_PLAN, 1)}
    # checked against the declared plan instead, the new run is the one that differs
    as_declared = study_provenance(tmp_path, others=[], analysis=versions[0]["analysis"])
    assert {r.run[2]: r.status for r in as_declared.records} == {0: UNDER_PLAN, 1: EARLIER_VERSION}


def test_a_record_from_before_the_plan_and_one_under_another_plan_are_named(tmp_path):
    write_record(tmp_path, seed=0, finished_at="2020-01-01T00:00:00+0000")  # before digests, and before the plan
    digest = open_manifest(config(tmp_path), RESOLVED, {})["analysis_declared"]["digest"]
    assert read_manifest(tmp_path)["analysis_declared"]["finished_runs"] == 1
    write_record(tmp_path, seed=1, digest="f" * 64)
    write_record(tmp_path, variant="no_target_networks", seed=0, digest=digest)
    provenance = study_provenance(tmp_path, others=[])
    by_run = {r.run: r for r in provenance.records}
    assert by_run[("Pendulum-v1", "td3", 0)].status == BEFORE_DIGESTS and by_run[("Pendulum-v1", "td3", 0)].before_plan
    assert by_run[("Pendulum-v1", "td3", 1)].status == OTHER_PLAN and not by_run[("Pendulum-v1", "td3", 1)].before_plan
    assert by_run[("Pendulum-v1", "no_target_networks", 0)].status == UNDER_PLAN
    assert [r.run for r in provenance.mismatched] == [("Pendulum-v1", "td3", 0), ("Pendulum-v1", "td3", 1)]
    assert provenance.verified and not provenance.clean


def test_a_tampered_plan_does_not_verify(tmp_path):
    open_manifest(config(tmp_path), RESOLVED, {})
    manifest = read_manifest(tmp_path)
    manifest["analysis"]["alpha"] = 0.2  # edited by hand, not through the study
    (tmp_path / "study.json").write_text(json.dumps(manifest))
    assert study_provenance(tmp_path, others=[]).verified is False


def test_reused_records_are_found_copied_or_reproduced_and_declared(tmp_path):
    source, study = tmp_path / "source", tmp_path / "study"
    source_digest = open_manifest(config(source, analysis={"alpha": 0.1}), RESOLVED, {})["analysis_declared"]["digest"]
    for seed in (0, 1):
        write_record(source, seed=seed, digest=source_digest, finished_at="2030-01-01T00:00:00+0000")
    digest = open_manifest(config(study), RESOLVED, {})["analysis_declared"]["digest"]
    # seed 0 copied; seed 1 run again (same results, another wall time and date); seed 2 its own
    run_path(study, "Pendulum-v1", "td3", 0).parent.mkdir(parents=True)
    shutil.copy(run_path(source, "Pendulum-v1", "td3", 0), run_path(study, "Pendulum-v1", "td3", 0))
    write_record(study, seed=1, digest=digest, finished_at="2031-01-01T00:00:00+0000", wall=2.0)
    write_record(study, seed=2, digest=digest, finished_at="2031-01-01T00:00:00+0000")
    provenance = study_provenance(study)  # default: every study folder beside it
    assert [(r.run[2], r.source, r.how, r.declared) for r in provenance.reused] == [
        (0, str(source.resolve()), COPIED, False),
        (1, str(source.resolve()), REPRODUCED, False),
    ]
    assert {r.run[2]: r.status for r in provenance.records} == {0: OTHER_PLAN, 1: UNDER_PLAN, 2: UNDER_PLAN}
    assert study_provenance(study, others=[]).reused == ()
    # a declared reuse is named under the manifest's name for the source, found or not
    manifest = read_manifest(study)
    manifest["reused"] = [{"from": "docs/studies/source", "runs": [["Pendulum-v1", "td3", 0], ["Pendulum-v1", "td3", 5]]}]
    (study / "study.json").write_text(json.dumps(manifest))
    reused = study_provenance(study, others=[source]).reused
    assert [(r.run[2], r.source, r.how, r.declared) for r in reused] == [
        (0, "docs/studies/source", COPIED, True),
        (1, str(source), REPRODUCED, False),
        (5, "docs/studies/source", None, True),
    ]


def test_a_manifest_from_before_digests_gets_one_when_resumed(tmp_path):
    open_manifest(config(tmp_path), RESOLVED, {})
    manifest = read_manifest(tmp_path)
    del manifest["design"], manifest["analysis_declared"]["digest"]
    (tmp_path / "study.json").write_text(json.dumps(manifest))
    write_record(tmp_path, seed=0)
    assert study_provenance(tmp_path, others=[]).digest is None
    resumed = open_manifest(config(tmp_path), RESOLVED, {})
    assert resumed["design"]["variants"] == ["td3", "no_target_networks"] and resumed["analysis_declared"]["digest_added"]
    provenance = study_provenance(tmp_path, others=[])
    assert provenance.verified and provenance.runs(BEFORE_DIGESTS) == [("Pendulum-v1", "td3", 0)]


def test_a_plan_key_the_declared_plan_predates_is_no_change_at_its_default(tmp_path):
    open_manifest(config(tmp_path), RESOLVED, {})
    write_record(tmp_path)
    manifest = read_manifest(tmp_path)
    del manifest["analysis"]["divergence_factor"]  # a plan declared before the key existed
    (tmp_path / "study.json").write_text(json.dumps(manifest))
    assert "divergence_factor" not in open_manifest(config(tmp_path), RESOLVED, {})["analysis"]
    with pytest.raises(StudyError, match=r"divergence_factor null -> 5\.0"):
        open_manifest(config(tmp_path, analysis={"divergence_factor": 5.0}), RESOLVED, {})


def test_amend_plan_needs_a_reason():
    with pytest.raises(StudyError, match="amend_plan must say why"):
        config("out", amend_plan="  ")


def test_an_amendment_recorded_without_a_digest_gets_one_when_the_study_is_resumed(tmp_path):
    open_manifest(config(tmp_path, analysis={"alpha": 0.1}), RESOLVED, {})
    write_record(tmp_path)
    manifest = read_manifest(tmp_path)
    previous = {**manifest["analysis"], "alpha": 0.05}
    del manifest["design"], manifest["analysis_declared"]["digest"]
    manifest["amendments"] = [{"at": "x", "finished_runs": 1, "reason": "r", "previous": previous,
                               "analysis": manifest["analysis"], "digest": None}]  # fmt: skip
    (tmp_path / "study.json").write_text(json.dumps(manifest))
    resumed = open_manifest(config(tmp_path, analysis={"alpha": 0.1}), RESOLVED, {})
    original, amended = plan_versions(resumed)
    assert original["analysis"]["alpha"] == 0.05 and None not in (original["digest"], amended["digest"])
    assert plan_in_force_digest(resumed) == amended["digest"] != original["digest"]
    assert study_provenance(tmp_path, others=[]).verified


def test_the_source_digest_changes_with_any_source_file_and_not_with_caches(tmp_path):
    import shutil
    from pathlib import Path

    import sb3_ablation
    from sb3_ablation.study.run.recording import source_digest, tree_digest

    copy = tmp_path / "sb3_ablation"
    shutil.copytree(Path(sb3_ablation.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert tree_digest(copy) == source_digest()
    (copy / "__pycache__").mkdir(exist_ok=True)
    (copy / "__pycache__" / "switches.cpython-311.pyc").write_bytes(b"cache")
    assert tree_digest(copy) == source_digest()
    switches = copy / "switches.py"
    switches.write_text(switches.read_text() + "\n")
    assert tree_digest(copy) != source_digest()


def test_resumed_runs_and_source_digests_are_counted_in_the_provenance_and_its_banners(tmp_path):
    from types import SimpleNamespace

    from sb3_ablation.study.render.plan import _provenance_banners

    digest = open_manifest(config(tmp_path), RESOLVED, {})["analysis_declared"]["digest"]
    write_record(tmp_path, seed=0, digest=digest, resumed_from=150, source_digest="a" * 64)
    write_record(tmp_path, seed=1, digest=digest, resumed_from=150, source_digest="a" * 64)
    write_record(tmp_path, variant="no_target_networks", seed=0, digest=digest)
    provenance = study_provenance(tmp_path, others=[])
    assert provenance.resumed == {150: [("Pendulum-v1", "td3", 0), ("Pendulum-v1", "td3", 1)]}
    assert provenance.source_digests == {"a" * 64: 2, None: 1}
    banners = _provenance_banners(SimpleNamespace(provenance=provenance, declared_at=None))
    resumed = [banner for banner in banners if "resumed from a checkpoint" in banner]
    assert len(resumed) == 1 and resumed[0].startswith("**2 runs resumed from a checkpoint**")
    assert "at step 150: " in resumed[0]
