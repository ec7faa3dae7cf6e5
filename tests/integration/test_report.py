"""The study report on synthetic study folders with known numbers: claims only where the runs carry them, paired
differences, both run-record formats, warnings and figures."""

import math
import re

import numpy as np
import pytest
from scipy import stats

from sb3_ablation.common.io import read_json, write_json_atomic
from sb3_ablation.study.analyse.results import aligned_curves
from sb3_ablation.study.analyse.statistics import curve_estimates, iqm_per_timestep, min_permutation_p, outcome_statistics
from sb3_ablation.study.render.report import load_study, write_report
from sb3_ablation.study.store.runs import run_path

REPS = 200  # small bootstraps keep the tests fast; the effects below are far larger than any CI
TIMESTEPS = [0, 500, 1000]
WARNING = "UserWarning: action_noise=NormalActionNoise is ignored because deterministic_policy=False"


def run_record(env, variant, seed, final, bias, fmt=2, status="ok", warnings=()):
    """A run record whose last evaluation has the given return and bias (format 1: evaluations only)."""
    record = {
        "format": fmt, "env": env, "variant": variant, "seed": seed, "status": status,
        "error": None if status == "ok" else "boom",
        "evaluations": {
            "timesteps": TIMESTEPS,
            "mean_return": [final - 100.0, final - 50.0, final],
            "std_return": [1.0, 1.0, 1.0],
            "mean_q": [bias, bias, bias],
            "mean_discounted_return": [0.0, 0.0, 0.0],
            "bias": [bias + 2.0, None, bias],
        },
    }  # fmt: skip
    if fmt == 2:
        record["evaluations"]["episode_returns"] = [[final - 100.0] * 2, [final - 50.0] * 2, [final - 1.0, final + 1.0]]
        record["diagnostics"] = {
            "timesteps": TIMESTEPS,
            "q1_mean": [None, 1.0 + seed, 2.0 + seed],
            "twin_q_gap": [None, 0.5, 0.25],
            "target_q_mean": [None, 1.0, 2.0],
            "td_error": [None, 3.0, 1.0],
        }
        if variant == "no_deterministic_policy":
            record["diagnostics"]["actor_std"] = [None, 0.3, 0.1]
        record["warnings"] = list(warnings)
    return record


def write_study(out, finals, seeds, fmt=2, warnings=None):
    """
    :param finals: (env, variant) -> function seed -> (final return, final bias)
    :param warnings: (env, variant) -> warnings of its runs
    """
    envs = list(dict.fromkeys(env for env, _ in finals))
    variants = list(dict.fromkeys(variant for _, variant in finals))
    write_json_atomic(out / "study.json", {"envs": envs, "variants": variants, "seeds": list(seeds), "settings": {}})
    for (env, variant), outcome in finals.items():
        for seed in seeds:
            final, bias = outcome(seed)
            warned = (warnings or {}).get((env, variant), ())
            write_json_atomic(
                run_path(out, env, variant, seed), run_record(env, variant, seed, final, bias, fmt, warnings=warned)
            )


def leave_one_out(env="Pendulum-v1"):
    """td3; no_replay_buffer far worse with far more overestimation; no_clipped_double_q the same as td3."""
    return {
        (env, "td3"): lambda seed: (-150.0 - 3 * seed, 1.0 + 0.1 * seed),
        (env, "no_replay_buffer"): lambda seed: (-1500.0 + 7 * seed, 200.0 + seed),
        (env, "no_clipped_double_q"): lambda seed: (-150.0 - 3 * seed + (1 if seed % 2 else -1), 1.0 + 0.1 * seed),
    }


def table_rows(text, variant):
    return [line for line in text.splitlines() if line.startswith(f"| {variant} |")]


def test_fewer_than_five_seeds_make_no_claim(tmp_path):
    write_study(tmp_path, leave_one_out(), seeds=[0, 1])
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "**differs** (paired" not in text and "**equivalent** (" not in text and "no effect" not in text
    assert "No claim where a variant has fewer than 5 runs" in text and "every comparison is `unresolved`" in text
    assert f"cannot go below p = {min_permutation_p(2, 2):.2g}" in text and min_permutation_p(2, 2) == pytest.approx(1 / 3)
    # per-seed values and per-seed differences instead: -1500 - (-150) = -1350 on seed 0, -1493 - (-153) = -1340 on 1
    return_row, last_row, _, bias_row = table_rows(text, "no_replay_buffer")
    assert "s0: -1,500.0, s1: -1,493.0" in return_row and "s0: -1,350.0, s1: -1,340.0" in return_row
    assert "| -1,345.0 |" in return_row and return_row.replace(" off: replay_buffer |", "") == last_row  # one evaluation
    assert "s0: 199.0, s1: 199.9" in bias_row and "[" not in return_row
    assert "**unresolved**, no test (n = 2 < 5 pairs: no test): no_replay_buffer, no_clipped_double_q." in text
    report = read_json(tmp_path / "report.json")
    entry = report["envs"]["Pendulum-v1"]["outcomes"]["final_window"]["variants"]["no_replay_buffer"]
    assert entry["verdict"] == "unresolved" and entry["p_raw"] is None and entry["n"] == 2


def test_five_seeds_with_a_clear_effect_differ_and_every_figure_is_written(tmp_path):
    envs = ("Pendulum-v1", "MountainCarContinuous-v0")
    write_study(tmp_path, {**leave_one_out(envs[0]), **leave_one_out(envs[1])}, seeds=range(5))
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "No claim where" not in text
    pendulum = text.split("## MountainCarContinuous-v0")[0]
    worse = table_rows(pendulum, "no_replay_buffer")
    same = table_rows(pendulum, "no_clipped_double_q")
    assert len(worse) == len(same) == 4  # primary, last evaluation, area under the curve, overestimation
    assert all("| **differs** (paired t, Holm) |" in row for row in worse)
    # the same return within ±1: equivalent within the margin (10% of td3's improvement of 100 over step 0 = ±10);
    # the same overestimation, but its margin (10% of a discounted return of 0) is 0: nothing can be shown equivalent
    assert all("| **equivalent** (TOST, Holm) |" in row for row in same[:3]) and "| unresolved |" in same[3]
    assert "±10.0 (10% of td3's improvement over the untrained policy" in pendulum
    # the generated findings name the test, n, the family and both p-values
    assert re.search(
        r"n = 5 seed pairs, family of 2, alpha = 0.05, equivalence margin ±10.0 .*\n  - \*\*differs\*\* \(paired "
        r"t-test, Holm\): no_replay_buffer -1,3\d\d\.\d \[.*\], p < 0.001, Holm < 0.001\.",
        pendulum,
    )
    # across envs: both normalizations side by side, and the sign test over all 10 seed pairs
    assert "### Aggregate under both normalizations" in text and "reference: paired Δ" in text
    across = text.split("## Across")[1]
    assert table_rows(across, "no_replay_buffer")[1].count("**differs**") == 2
    assert table_rows(across, "no_replay_buffer")[0].startswith("| no_replay_buffer | 0 | 10 | 0 | 0.002 |")

    report = read_json(tmp_path / "report.json")
    for env in envs:
        for outcome in ("final_window", "last", "auc", "overestimation"):
            for variant in ("no_replay_buffer", "no_clipped_double_q"):
                entry = report["envs"][env]["outcomes"][outcome]["variants"][variant]
                assert {"verdict", "effect", "ci", "p_raw", "p_adjusted", "mde", "seeds_needed"} <= set(entry)
    assert report["envs"][envs[0]]["outcomes"]["final_window"]["variants"]["no_replay_buffer"]["verdict"] == "differs"

    names = {path.name for path in (tmp_path / "figures").glob("*.png")}
    per_env = ("learning_curves", "overestimation", "performance_profile", "primary_ci")
    aggregate = ("normalized_score", "normalized_score_reference", "performance_profile", "learning_curves")
    expected = {f"{env}_{kind}.png" for env in envs for kind in per_env} | {f"aggregate_{kind}.png" for kind in aggregate}
    assert names == expected
    assert all(f"(figures/{name})" in text for name in expected)
    assert not list(tmp_path.glob("**/*.tmp*"))


def test_a_component_with_opposite_real_effects_is_task_dependent(tmp_path):
    envs = ("Pendulum-v1", "MountainCarContinuous-v0")
    finals = {**leave_one_out(envs[0]), **leave_one_out(envs[1])}
    finals[(envs[1], "no_replay_buffer")] = lambda seed: (-150.0 - 3 * seed + 400 + seed, 1.0)  # better there
    write_study(tmp_path, finals, seeds=range(5))
    text = write_report(tmp_path, reps=REPS).read_text()
    assert re.search(
        r"\*\*Task-dependent\*\* .*: no_replay_buffer \(Pendulum-v1 -1,3\d\d\.\d, MountainCarContinuous-v0 40\d", text
    )
    assert read_json(tmp_path / "report.json")["across_envs"]["sign_tests"]["no_replay_buffer"]["task_dependent"]


def test_the_report_follows_the_declared_plan_and_says_when_flags_change_it(tmp_path):
    write_study(tmp_path, leave_one_out(), seeds=range(5))
    manifest = read_json(tmp_path / "study.json")
    write_json_atomic(tmp_path / "study.json", {**manifest, "analysis": {"primary": "last", "alpha": 0.01}})
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "The study declared its plan in `study.json`; the report follows it." in text
    assert "- Primary outcome: **return at the last evaluation**" in text and "alpha = 0.01" in text
    text = write_report(tmp_path, reps=REPS, alpha=0.05, margins={"Pendulum-v1": 3.0}).read_text()
    assert "**the plan used here differs from it**: alpha 0.01 -> 0.05; margins {} -> {'Pendulum-v1': 3.0}." in text
    assert "Pendulum-v1 ±3.0 (set by the plan)" in text


def test_paired_difference_is_the_mean_of_per_seed_differences():
    rng = np.random.default_rng(1)
    variant_seeds, baseline_seeds = [0, 1, 2, 3, 4, 6], [1, 2, 3, 4, 5, 6]
    variant = dict(zip(variant_seeds, rng.normal(10, 5, 6), strict=True))
    baseline = dict(zip(baseline_seeds, rng.normal(0, 5, 6), strict=True))
    result = outcome_statistics(
        {"x": list(variant.values()), "base": list(baseline.values())},
        "base",
        reps=REPS,
        seeds={"x": variant_seeds, "base": baseline_seeds},
    )["x"]
    common = [1, 2, 3, 4, 6]
    differences = np.array([variant[s] - baseline[s] for s in common])
    assert result.paired_seeds == tuple(common)
    assert np.array_equal(result.paired_diffs, differences)
    assert result.paired_diff == pytest.approx(differences.mean())
    low, high = stats.t.interval(0.95, len(common) - 1, loc=differences.mean(), scale=stats.sem(differences))
    assert result.paired_ci == pytest.approx((low, high))
    # the unpaired difference of IQMs is another number (all six runs of each, no pairing)
    assert result.diff == pytest.approx(
        stats.trim_mean(list(variant.values()), 0.25) - stats.trim_mean(list(baseline.values()), 0.25)
    )
    assert result.diff != pytest.approx(result.paired_diff)
    # fewer than 5 pairs: the mean, no interval
    few = outcome_statistics({"x": [1.0, 2.0], "base": [0.0, 0.0]}, "base", reps=REPS, seeds={"x": [0, 1], "base": [0, 1]})
    assert few["x"].paired_diff == 1.5 and few["x"].paired_ci is None and few["x"].significant is None
    assert few["x"].iqm_ci is None and few["x"].diff_ci is None


def test_format_1_and_format_2_records_both_load(tmp_path):
    finals = leave_one_out()
    write_study(tmp_path, {key: finals[key] for key in list(finals)[:1]}, seeds=[0], fmt=1)
    write_study(tmp_path, {key: finals[key] for key in list(finals)[1:]}, seeds=[0], fmt=2)
    write_json_atomic(
        tmp_path / "study.json", {"envs": ["Pendulum-v1"], "variants": [v for _, v in finals], "seeds": [0], "settings": {}}
    )
    data = load_study(tmp_path)
    old, new = data.runs["Pendulum-v1"]["td3"][0], data.runs["Pendulum-v1"]["no_replay_buffer"][0]
    assert old.diagnostics == {} and old.episode_returns == [] and old.warnings == []
    assert set(old.values) == set(new.values) == {"mean_return", "std_return", "mean_q", "mean_discounted_return", "bias"}
    assert math.isnan(new.values["bias"][1]) and new.final("bias") == 200.0
    assert np.array_equal(new.episode_returns[-1], [-1501.0, -1499.0])
    timesteps, q1 = aligned_curves(data.runs["Pendulum-v1"]["no_replay_buffer"], "q1_mean")
    assert np.array_equal(timesteps, TIMESTEPS) and np.isnan(q1[0, 0]) and np.array_equal(q1[0, 1:], [1.0, 2.0])
    assert aligned_curves(data.runs["Pendulum-v1"]["td3"], "q1_mean")[1].size == 0
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "twin-critic gap" in text and "| td3 |" in text


def test_warnings_are_listed_once_with_their_runs(tmp_path):
    write_study(
        tmp_path,
        leave_one_out(),
        seeds=[0, 1, 2],
        warnings={("Pendulum-v1", "no_replay_buffer"): [WARNING, WARNING], ("Pendulum-v1", "td3"): [WARNING]},
    )
    failed = run_record(
        "Pendulum-v1", "no_clipped_double_q", 2, 0.0, 0.0, status="failed", warnings=["RuntimeWarning: overflow"]
    )
    write_json_atomic(run_path(tmp_path, "Pendulum-v1", "no_clipped_double_q", 2), failed)
    text = write_report(tmp_path, reps=REPS).read_text()
    assert text.count(WARNING) == 1 and text.count("RuntimeWarning: overflow") == 1
    assert f"- `{WARNING}`: Pendulum-v1 no_replay_buffer (all seeds); Pendulum-v1 td3 (all seeds)" in text
    assert "- `RuntimeWarning: overflow`: Pendulum-v1 no_clipped_double_q (seed 2)" in text


def test_software_of_the_runs_is_stated_and_mixed_versions_are_named(tmp_path):
    write_study(tmp_path, leave_one_out(), seeds=[0, 1])
    variants = ("td3", "no_replay_buffer", "no_clipped_double_q")

    def set_torch(newer_for):
        for variant in variants:
            for seed in (0, 1):
                path = run_path(tmp_path, "Pendulum-v1", variant, seed)
                torch = "2.11.0+cu130" if (variant, seed) in newer_for else "2.13.0+cpu"
                write_json_atomic(path, {**read_json(path), "versions": {"torch": torch, "numpy": "2.4.6"}})
        return write_report(tmp_path, reps=REPS).read_text()

    text = set_torch({("td3", 1)})
    assert "several versions" in text
    assert "- numpy 2.4.6, torch 2.13.0+cpu: 5 runs, Pendulum-v1 no_clipped_double_q (all seeds); " in text
    assert "- numpy 2.4.6, torch 2.11.0+cu130: 1 run, Pendulum-v1 td3 (seed 1)" in text
    text = set_torch({(variant, 1) for variant in variants})
    assert "- numpy 2.4.6, torch 2.11.0+cu130: 3 runs, Pendulum-v1 every variant (seed 1)" in text
    text = set_torch(set())
    assert "Software of every run: numpy 2.4.6, torch 2.13.0+cpu." in text and "several versions" not in text


def test_curve_iqm_ignores_missing_values_and_matches_trim_mean():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(7, 4))
    values[[0, 3], 1] = np.nan
    values[:, 3] = np.nan
    point = iqm_per_timestep(values[:, None, :])
    for t in range(3):
        column = values[:, t]
        assert point[t] == pytest.approx(stats.trim_mean(column[np.isfinite(column)], 0.25))
    assert np.isnan(point[3])
    point_again, ci = curve_estimates(values[:, :3], reps=REPS)
    assert np.array_equal(point_again, point[:3]) and ci.shape == (2, 3) and np.all(ci[0] <= ci[1])
    assert curve_estimates(values[:4, :3], reps=REPS)[1] is None  # fewer than 5 runs: no band


def test_header_gives_each_envs_training_steps_and_the_studys_overrides(tmp_path):
    envs = ("Pendulum-v1", "MountainCarContinuous-v0")
    write_study(tmp_path, {**leave_one_out(envs[0]), **leave_one_out(envs[1])}, seeds=[0])
    manifest = {
        "envs": list(envs), "variants": ["td3", "no_replay_buffer", "no_clipped_double_q"], "seeds": [0],
        "settings": {"hyperparams": {"policy_kwargs": "dict(net_arch=[64, 64])"},
                     "env_hyperparams": {envs[1]: {"n_timesteps": 5000, "gamma": 0.9}}},
        "hyperparams": {envs[0]: {"ablatable_td3": {"n_timesteps": 20000.0}},
                        envs[1]: {"ablatable_td3": {"n_timesteps": 5000}}},
    }  # fmt: skip
    write_json_atomic(tmp_path / "study.json", manifest)
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "training steps: Pendulum-v1 20,000, MountainCarContinuous-v0 5,000;" in text
    assert "with policy_kwargs: dict(net_arch=[64, 64]), gamma (MountainCarContinuous-v0): 0.9;" in text
    assert "(here 1 run per variant)" in text


def test_a_panel_with_one_diverging_curve_gets_a_symlog_axis_and_an_ordinary_one_does_not():
    from sb3_ablation.study.render.figures import CurveEstimate, Panel, _symlog_threshold

    steps = np.arange(4)

    def curve(reach):
        iqm = np.array([0.0, reach / 2, -reach, reach / 4])
        return CurveEstimate(steps, iqm, None, iqm[None, :])

    ordinary = Panel("bias", "Q - return", {"td3": curve(30.0), "a": curve(50.0), "b": curve(400.0)})
    assert _symlog_threshold(ordinary) is None
    diverging = Panel("bias", "Q - return", {"td3": curve(30.0), "a": curve(50.0), "b": curve(1e6)})
    assert _symlog_threshold(diverging) == 50.0  # the median reach: linear where the ordinary curves are


def test_a_plan_in_the_study_file_is_validated_and_stored_as_declared(tmp_path):
    from sb3_ablation.study.plan.config import StudyConfig, StudyError
    from sb3_ablation.study.store.manifest import open_manifest

    with pytest.raises(StudyError, match=r"^analysis: alpha must be a number in \(0, 0.5\], got 2$"):
        StudyConfig(envs=["Pendulum-v1"], variants=["td3"], seeds=[0, 1], out=str(tmp_path), analysis={"alpha": 2})
    with pytest.raises(StudyError, match=r"^analysis: unknown outcome 'median'"):
        StudyConfig(envs=["Pendulum-v1"], variants=["td3"], seeds=[0, 1], out=str(tmp_path), analysis={"primary": "median"})
    config = StudyConfig(
        envs=["Pendulum-v1"], variants=["td3"], seeds=[0, 1], out=str(tmp_path), analysis={"primary": "auc", "alpha": 0.1}
    )
    open_manifest(config, {}, {})
    declared = read_json(tmp_path / "study.json")["analysis"]
    assert declared["primary"] == "auc" and declared["alpha"] == 0.1 and declared["secondary"] == ["last", "overestimation"]
    # a later invocation with another plan does not overwrite the declared one
    config.analysis = {**declared, "alpha": 0.2}
    open_manifest(config, {}, {})
    assert read_json(tmp_path / "study.json")["analysis"]["alpha"] == 0.1
    # a study made before plans existed declares none, and taking more seeds does not declare one after the fact
    manifest = read_json(tmp_path / "study.json")
    del manifest["analysis"]
    write_json_atomic(tmp_path / "study.json", manifest)
    config.seeds = [0, 1, 2]
    open_manifest(config, {}, {})
    extended = read_json(tmp_path / "study.json")
    assert "analysis" not in extended and extended["seeds"] == [0, 1, 2]


def test_report_flags_change_the_plan_and_bad_ones_are_refused(tmp_path, capsys):
    from sb3_ablation.cli.study import report_main

    write_study(tmp_path, leave_one_out(), seeds=range(5))
    assert report_main([str(tmp_path), "--reps", "100", "--margin", "Pendulum-v1=abc"]) == 2
    assert capsys.readouterr().err.strip() == (
        "sb3-ablation report: --margin 'Pendulum-v1=abc': expected ENV=VALUE with a number, e.g. Pendulum-v1=50"
    )
    assert report_main([str(tmp_path), "--reps", "100", "--primary", "auc", "--alpha", "0.1"]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "the report uses the defaults below, changed by the report's options." in text
    assert "Changed from the defaults: primary final_window -> auc; secondary ['last', 'auc', 'overestimation'] ->" in text
    assert read_json(tmp_path / "report.json")["plan"]["primary"] == "auc"


def test_format_3_records_use_the_overestimation_without_the_time_limit_artifact(tmp_path):
    write_study(tmp_path, leave_one_out(), seeds=range(5))
    for path in tmp_path.glob("runs/*/*/seed_*.json"):
        record = read_json(path)
        evaluations = record["evaluations"]
        # the new measure: here 1,000 below the old one, so the report can only show it by reading the new key
        evaluations["overestimation"] = [None if b is None else b - 1000.0 for b in evaluations["bias"]]
        evaluations["relative_overestimation"] = [0.1, 0.1, 0.1]
        evaluations["value_states"] = [10, 10, 10]
        evaluations["value_episodes"] = [[{"states": 5, "q_sum": 1.0}] for _ in TIMESTEPS]
        write_json_atomic(path, {**record, "format": 3, "overestimation_method": {"name": "return past the time limit"}})
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "old measure" not in text and "**Overestimation at the end** (secondary" in text
    bias_row = table_rows(text, "td3")[3]
    assert bias_row.startswith("| td3 | 5 | -998.8 [")  # IQM of 1.1, 1.2, 1.3 minus 1,000 (seeds 1-3 of 0-4)
    run = load_study(tmp_path).runs["Pendulum-v1"]["td3"][0]
    assert run.value_episodes[0] == [{"states": 5, "q_sum": 1.0}] and "value_episodes" not in run.values


def test_old_and_new_overestimation_measures_are_never_mixed(tmp_path):
    write_study(tmp_path, leave_one_out(), seeds=range(10))
    for path in tmp_path.glob("runs/*/*/seed_*.json"):
        record = read_json(path)
        if record["seed"] >= 5:  # only seeds 5-9 have the new measure
            record["evaluations"]["overestimation"] = [0.0, 0.0, 7.0]
            write_json_atomic(path, {**record, "format": 3})
    from sb3_ablation.study.analyse.analysis import outcome_values
    from sb3_ablation.study.plan.analysis_plan import AnalysisPlan

    seeds, values = outcome_values(load_study(tmp_path), "Pendulum-v1", "td3", "overestimation", AnalysisPlan())
    assert seeds.tolist() == [5, 6, 7, 8, 9] and values.tolist() == [7.0] * 5


def test_a_factorial_study_gets_its_factorial_section_and_interaction_plots(tmp_path):
    from sb3_ablation.study.plan.variants import resolve_variants

    variants = resolve_variants("factorial:target_networks,clipped_double_q")

    def outcome(variant):
        # removing target networks costs 100, removing clipped double Q nothing, no interaction
        cost = 100.0 * (not variant.switches["target_networks"])
        return lambda seed: (-150.0 - cost - 3 * seed + (seed % 2), 1.0)

    write_study(tmp_path, {("Pendulum-v1", v.name): outcome(v) for v in variants}, seeds=range(6))
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "## Pendulum-v1: factorial analysis" in text
    assert re.search(r"\| remove target_networks \| -100\.0 \[.*\| differs \|", text)
    assert (tmp_path / "figures" / "Pendulum-v1_factorial_final_window.png").stat().st_size > 0
    effects = read_json(tmp_path / "report.json")["sections"]["Pendulum-v1: factorial analysis"]["outcomes"]
    assert effects["final_window"]["effects"]["target_networks"]["verdict"] == "differs"
    loo = tmp_path / "loo"
    write_study(loo, leave_one_out(), seeds=range(5))
    assert "factorial analysis" not in write_report(loo, reps=REPS).read_text()
