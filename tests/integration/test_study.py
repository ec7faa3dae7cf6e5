"""The ablation study: variants, runs end to end, resume, failures, Ray, and the report's statistics."""

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sb3_ablation import SWITCHES
from sb3_ablation.study import write_report
from sb3_ablation.study.analyse.results import load_study
from sb3_ablation.study.analyse.statistics import outcome_statistics
from sb3_ablation.study.plan.config import StudyConfig, StudyError, resolve_hyperparams
from sb3_ablation.study.plan.variants import expand_preset, parse_variant, resolve_variants
from sb3_ablation.study.render.report import status_markdown
from sb3_ablation.study.run.overestimation import discounted_returns
from sb3_ablation.study.run.recording import library_versions
from sb3_ablation.study.run.runner import StudyResult, run_study
from sb3_ablation.study.store.manifest import open_manifest, planned_runs
from sb3_ablation.study.store.runs import iter_runs, read_run, record_paths, run_path
from tests.conftest import make_tiny_study


def test_variant_presets_and_names():
    assert expand_preset("leave-one-out") == ["td3", *(f"no_{switch}" for switch in SWITCHES)]
    factorial = resolve_variants("factorial")
    assert len(factorial) == 64 and len({tuple(v.switches.values()) for v in factorial}) == 64
    chain = resolve_variants("ddpg-to-td3")
    assert chain[0].switches == {**dict.fromkeys(SWITCHES, True), **dict.fromkeys(SWITCHES[3:], False)}
    assert chain[-1].name == "td3" and len(chain) == 4
    combo = parse_variant("no_target_networks+no_delayed_policy_update")
    assert combo.switches["target_networks"] is False and combo.switches["delayed_policy_update"] is False
    assert sum(combo.switches.values()) == 4
    with pytest.raises(ValueError, match="no_clipped_dobule_q"):
        parse_variant("no_clipped_dobule_q")


def test_discounted_returns_by_hand():
    assert np.allclose(discounted_returns(np.array([1.0, 2.0, 3.0]), 0.5), [1 + 0.5 * 2 + 0.25 * 3, 2 + 0.5 * 3, 3.0])


@pytest.fixture(scope="module")
def tiny_study_done(tmp_path_factory) -> tuple[StudyConfig, StudyResult]:
    """The tiny study (2 variants x 2 seeds, 2 worker processes) run once, and what :func:`run_study` returned."""
    config = make_tiny_study(tmp_path_factory.mktemp("tiny_study"))
    return config, run_study(config, log=lambda _: None)


def test_tiny_study_end_to_end_then_resume_redoes_nothing(tiny_study_done):
    config, result = tiny_study_done
    out = Path(config.out)
    assert (result.total, result.ok, result.skipped, result.failed) == (4, 4, 0, [])
    records = list(iter_runs(out))
    assert {(r["variant"], r["seed"]) for r in records} == {(v, s) for v in ("td3", "no_clipped_double_q") for s in (0, 1)}
    for record in records:
        assert record["status"] == "ok" and record["versions"]["stable_baselines3"]
        assert record["switches"]["clipped_double_q"] is (record["variant"] == "td3")
        evaluations = record["evaluations"]
        assert evaluations["timesteps"][-1] == 300 and len(evaluations["timesteps"]) >= 3
        assert all(np.isfinite(evaluations[key]).all() for key in ("mean_return", "overestimation", "relative_overestimation"))
    report = write_report(out, reps=200)
    text = report.read_text()
    assert "| td3 |" in text and "no_clipped_double_q" in text and "IQM" in text
    assert len(list((out / "figures").glob("*.png"))) >= 4

    # A killed study: one run never got written. The rerun redoes that run alone.
    lost = run_path(out, "Pendulum-v1", "td3", 1)
    lost.unlink()
    kept = {path: path.stat().st_mtime_ns for path in record_paths(out)}
    assert len(kept) == 3
    again = run_study(config, log=lambda _: None)
    assert (again.ok, again.skipped) == (1, 3)
    assert lost.exists()
    assert all(path.stat().st_mtime_ns == mtime for path, mtime in kept.items())


def test_study_refuses_a_folder_made_with_other_settings(tiny_study_done):
    config, _ = tiny_study_done
    with pytest.raises(StudyError, match="n_timesteps"):
        run_study(replace(config, n_timesteps=400), log=lambda _: None)


def test_more_seeds_of_some_variants_plan_those_runs_alone(tmp_path, tiny_study):
    """More seeds for the comparisons the report leaves unresolved (its seeds needed) extend the plan by those runs
    alone."""

    def extend(**settings):
        config = tiny_study(tmp_path, **settings)
        return open_manifest(config, resolve_hyperparams(config, config.variant_objects), library_versions())

    manifest = extend(variants=["td3", "no_clipped_double_q", "no_target_networks"], seeds=2)
    assert len(planned_runs(manifest)) == 6 and len(manifest["grids"]) == 1
    manifest = extend(variants=["td3", "no_clipped_double_q"], seeds=[2, 3])
    assert manifest["seeds"] == [0, 1, 2, 3] and len(manifest["grids"]) == 2
    planned = planned_runs(manifest)
    assert len(planned) == 10 and ("Pendulum-v1", "no_target_networks", 2) not in planned
    assert extend(variants=["td3"], seeds=[1, 3])["grids"] == manifest["grids"]  # already planned: no new grid
    data = load_study(tmp_path)
    assert sorted(data.missing) == sorted(planned)
    assert status_markdown(data).startswith("**Status: 0 of 10 runs finished** (seeds 0-3")


def test_failing_run_is_recorded_while_the_others_finish(tmp_path, tiny_study):
    # A negative learning rate passes the config check but Adam refuses it inside the run
    config = tiny_study(
        tmp_path,
        variants=["td3"],
        seeds=1,
        envs=["Pendulum-v1", "MountainCarContinuous-v0"],
        env_hyperparams={"MountainCarContinuous-v0": {"learning_rate": -1.0}},
    )
    result = run_study(config, log=lambda _: None)
    assert result.ok == 1 and len(result.failed) == 1 and "MountainCarContinuous-v0" in result.failed[0]
    failed = read_run(run_path(tmp_path, "MountainCarContinuous-v0", "td3", 0))
    assert failed["status"] == "failed" and "learning rate" in failed["error"].lower()
    assert read_run(run_path(tmp_path, "Pendulum-v1", "td3", 0))["status"] == "ok"
    # A rerun retries the failed run (and fails it again) without touching the finished one
    assert run_study(config, log=lambda _: None).skipped == 1


def test_ray_backend_on_a_local_ray(tmp_path, tiny_study):
    pytest.importorskip("ray")
    # one CPU: the two runs one after the other in one Ray worker (the backend is the point here, not runs side by side)
    result = run_study(tiny_study(tmp_path, variants=["td3"], backend="ray", workers=1), log=lambda _: None)
    assert (result.ok, result.failed) == (2, [])
    assert {record["seed"] for record in iter_runs(tmp_path)} == {0, 1}


def test_report_statistics_on_synthetic_results():
    rng = np.random.default_rng(0)
    scores = {"td3": rng.normal(-150, 10, 12), "worse": rng.normal(-400, 10, 12), "same": rng.normal(-150, 10, 12)}
    result = outcome_statistics(scores, baseline="td3", reps=2_000, seed=0)
    for variant, values in scores.items():
        assert result[variant].n_runs == 12
        assert result[variant].iqm == pytest.approx(stats.trim_mean(values, 0.25))
        assert result[variant].mean == pytest.approx(np.mean(values))
        low, high = result[variant].iqm_ci
        assert low <= result[variant].iqm <= high
    worse, td3 = scores["worse"], scores["td3"]
    assert result["worse"].diff == pytest.approx(stats.trim_mean(worse, 0.25) - stats.trim_mean(td3, 0.25))
    assert result["td3"].diff is None and result["td3"].baseline_runs == 0
    assert result["same"].baseline_runs == 12 and result["same"].paired_diffs == ()  # no seeds given: nothing paired


def test_bad_study_settings_are_one_line_errors(tmp_path, tiny_study):
    with pytest.raises(StudyError, match="NotAnEnv-v0"):
        run_study(tiny_study(tmp_path, envs=["NotAnEnv-v0"]), log=lambda _: None)
    with pytest.raises(StudyError, match="clipped_double_q"):
        run_study(tiny_study(tmp_path, hyperparams={"clipped_double_q": False}), log=lambda _: None)
    assert not os.path.exists(tmp_path / "runs")


def test_every_engine_name_has_an_engine():
    from sb3_ablation.study.plan.config import ENGINES as NAMES
    from sb3_ablation.study.run.engines import ENGINES

    assert tuple(ENGINES) == NAMES


def test_conduct_takes_a_config_or_a_study_file_with_changes_and_keeps_a_one_seed_list(tmp_path, monkeypatch, tiny_study):
    """``sb3_ablation.study.conduct``: settings replace the config's or the file's; a plain study goes to run_study."""
    from sb3_ablation.study import conduct, flow
    from sb3_ablation.study.plan.config import SeedList

    given = []
    monkeypatch.setattr(flow, "run_study", lambda config, log=print: given.append(config) or len(given))
    config = tiny_study(tmp_path / "a", variants=["td3"], seeds=SeedList([7]))
    assert conduct(config, out=str(tmp_path / "b")) == 1
    assert (given[0].seeds, given[0].out, given[0].variants) == ([7], str(tmp_path / "b"), ["td3"])
    assert conduct("pendulum", out=str(tmp_path / "c"), seeds=2) == 2
    assert (given[1].envs, given[1].seeds, given[1].n_timesteps, given[1].out) == (
        ["Pendulum-v1"],
        [0, 1],
        20_000,
        str(tmp_path / "c"),
    )
    assert given[1].study_file is not None and given[1].study_file.endswith("pendulum.yml")
