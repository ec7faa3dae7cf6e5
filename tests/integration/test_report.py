"""The study report on synthetic study folders with known truth: robust verdicts where the runs carry them, margins
fixed outside the results, failures counted, warnings and figures."""

import re
import shutil
from dataclasses import replace as dataclasses_replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from sb3_ablation.common.io import read_json, write_json_atomic
from sb3_ablation.study import write_report
from sb3_ablation.study.analyse.learning_region import AVERAGED_OVER_FLOOR
from sb3_ablation.study.analyse.outcomes import outcome_values
from sb3_ablation.study.analyse.report import analyse_study
from sb3_ablation.study.analyse.results import load_study
from sb3_ablation.study.analyse.statistics import curve_estimates, iqm_per_timestep, min_permutation_p, outcome_statistics
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.render.labels import qualified_verdict
from sb3_ablation.study.render.report import render_report
from sb3_ablation.study.store.runs import iter_runs, read_run, run_path, write_run

REPS = 200  # small bootstraps keep the tests fast; the effects below are far larger than any CI
TIMESTEPS = [0, 500, 1000]
WARNING = "UserWarning: action_noise=NormalActionNoise is ignored because deterministic_policy=False"
# Pendulum-v1 at 20k steps: margin 5% of the span from the random policy (-1,218.9) to rl-zoo's -151.9, i.e. 53.35;
# a run did not learn below -1,112.2
PENDULUM_MARGIN = 0.05 * (1218.9 - 151.9)


def run_record(env, variant, seed, final, overestimation, status="ok", warnings=()):
    """A run record (the current format) whose last evaluation has the given return and overestimation."""
    return {
        "format": 3, "env": env, "variant": variant, "seed": seed, "status": status,
        "error": None if status == "ok" else "boom",
        "evaluations": {
            "timesteps": TIMESTEPS,
            "mean_return": [final - 100.0, final - 50.0, final],
            "std_return": [1.0, 1.0, 1.0],
            "mean_q": [overestimation, overestimation, overestimation],
            "mean_discounted_return": [0.0, 0.0, 0.0],
            "overestimation": [overestimation + 2.0, None, overestimation],
            "episode_returns": [[final - 100.0] * 2, [final - 50.0] * 2, [final - 1.0, final + 1.0]],
        },
        "diagnostics": {
            "timesteps": TIMESTEPS,
            "q1_mean": [None, 1.0 + seed, 2.0 + seed],
            "twin_q_gap": [None, 0.5, 0.25],
            "target_q_mean": [None, 1.0, 2.0],
            "td_error": [None, 3.0, 1.0],
        },
        "warnings": list(warnings),
    }  # fmt: skip


def manifest(envs, variants, seeds, **extra):
    """A study manifest whose envs trained 20k steps (Pendulum-v1's reference budget), gamma 0.98."""
    hyperparams = {env: {"ablatable_td3": {"n_timesteps": 20000, "gamma": 0.98}} for env in envs}
    return {"envs": list(envs), "variants": list(variants), "seeds": list(seeds), "settings": {},
            "hyperparams": hyperparams, **extra}  # fmt: skip


def write_study(out, finals, seeds, warnings=None, **extra):
    """
    :param finals: (env, variant) -> function seed -> (final return, final overestimation)
    :param warnings: (env, variant) -> warnings of its runs
    :param extra: more manifest entries (``analysis``, ``analysis_declared``)
    """
    envs = list(dict.fromkeys(env for env, _ in finals))
    variants = list(dict.fromkeys(variant for _, variant in finals))
    write_json_atomic(out / "study.json", manifest(envs, variants, seeds, **extra))
    for (env, variant), outcome in finals.items():
        for seed in seeds:
            final, overestimation = outcome(seed)
            warned = (warnings or {}).get((env, variant), ())
            write_run(
                run_path(out, env, variant, seed), run_record(env, variant, seed, final, overestimation, warnings=warned)
            )


def untied(seed, size):
    """``size`` in magnitude, a little less on each later seed, and of alternating sign: paired differences with no two
    magnitudes alike (ties send the Wilcoxon test to scipy's slow permutation path, which tests/unit/test_robust.py
    checks; here it would only cost time)."""
    return (1 if seed % 2 else -1) * size * (1 - seed / 100)


def leave_one_out(env="Pendulum-v1"):
    """td3; no_replay_buffer far worse with far more overestimation; no_clipped_double_q the same as td3 within ±1."""
    return {
        (env, "td3"): lambda seed: (-150.0 - 3 * seed, 1.0 + 0.1 * seed),
        (env, "no_replay_buffer"): lambda seed: (-1500.0 + 7 * seed, 200.0 + seed),
        (env, "no_clipped_double_q"): lambda seed: (-150.0 - 3 * seed + untied(seed, 1.0), 1.0 + 0.1 * seed),
    }


def table_rows(text, variant):
    """The rows of ``variant`` in the outcome tables (the 'Where TD3 learns' blocks left out)."""
    text = re.sub(r"### Where TD3 learns.*?### Tables and figures", "", text, flags=re.DOTALL)
    return [line for line in text.splitlines() if line.startswith(f"| {variant} |")]


def entry(out, variant, outcome="final_window", env="Pendulum-v1"):
    return read_json(out / "report.json")["envs"][env]["outcomes"][outcome]["variants"][variant]


def test_fewer_than_five_seeds_make_no_claim(tmp_path):
    write_study(tmp_path, leave_one_out(), seeds=[0, 1])
    text = write_report(tmp_path, reps=REPS).read_text()
    assert (
        "| **differs**" not in text and "| **equivalent**" not in text and "no effect" not in text.replace("'no effect'", "")
    )
    assert "No claim where a variant has fewer than 5 runs" in text and "every comparison is `unresolved`" in text
    assert f"cannot go below p = {min_permutation_p(2, 2):.2g}" in text and min_permutation_p(2, 2) == pytest.approx(1 / 3)
    # per-seed values and per-seed differences instead: -1500 - (-150) = -1350 on seed 0, -1493 - (-153) = -1340 on 1
    return_row, last_row, _, overestimation_row = table_rows(text, "no_replay_buffer")[:4]
    assert "s0: -1,500.0, s1: -1,493.0" in return_row and "s0: -1,350.0, s1: -1,340.0" in return_row
    assert "| -1,345.0 |" in return_row and return_row.replace(" off: replay_buffer |", "") == last_row  # one evaluation
    assert "s0: 200.0, s1: 201.0" in overestimation_row and "[" not in return_row
    assert "unresolved, no test (n = 2 < 5 pairs: no test): no_replay_buffer, no_clipped_double_q." in text
    result = entry(tmp_path, "no_replay_buffer")
    assert result["verdict"] == "unresolved" and result["p_raw"] is None and result["n"] == 2
    # it points to the committed answer for the same task, in the findings, the task's section and report.json
    answer = read_json(tmp_path / "report.json")["envs"]["Pendulum-v1"]["committed_answer"]
    assert (answer["study"], answer["page"]) == ("pendulum", "docs/results/pendulum.md")
    assert text.count(answer["sentence"]) == 2 and "`docs/results/pendulum.md`" in answer["sentence"]


@pytest.fixture(scope="module")
def fixed_after_the_runs(tmp_path_factory):
    """Leave-one-out on 10 seeds whose (default) plan was declared after its 30 runs had finished: its folder and the
    text of its report."""
    folder = tmp_path_factory.mktemp("fixed_after_the_runs")
    declared = {"at": "2026-11-25T07:00:00+0000", "finished_runs": 30, "note": "declared after the runs"}
    write_study(folder, leave_one_out(), seeds=range(10), analysis=AnalysisPlan().to_dict(), analysis_declared=declared)
    return folder, write_report(folder, reps=REPS).read_text()


def test_the_report_opens_with_its_findings_then_each_task_and_ends_with_the_method(fixed_after_the_runs):
    folder, text = fixed_after_the_runs
    order = [
        "# Ablation study report: Pendulum-v1", "## Findings", "analysis plan was fixed after 30 runs", "## Pendulum-v1",
        "### Where TD3 learns", "### Tables and figures", "(primary; ", "## Effects along training", "## Method",
        "### Study", "Study folder", "### Verdicts and error control", "### Analysis plan", "**Status: 30 of",
    ]  # fmt: skip
    positions = [text.find(marker) for marker in order]
    assert -1 not in positions and positions == sorted(positions), dict(zip(order, positions, strict=True))
    assert text.count("\n## ") == 4  # findings, the task, effects along training, the method: nothing else here
    # ten seeds decide no_replay_buffer: no pointer to a committed answer
    assert "Too few seeds" not in text and read_json(folder / "report.json")["envs"]["Pendulum-v1"]["committed_answer"] is None


def ceiling_floor_and_failures(kind):
    """Pendulum-v1 leave-one-out on 10 seeds, no_clipped_double_q within ±0.5 of td3 on every seed (equivalent):
    ``ceiling``: td3 at -150 (rl-zoo: -151.9), every run learned; ``floor``: td3 at -1,200, below the rule's -1,165.55
    on every seed; ``failures``: td3 at -150 except seed 3 at -1,200, as for the variant. no_replay_buffer never learns
    (at -1,250 and below, 1.5 lower on each later seed)."""

    def td3(seed):
        solved = kind == "ceiling" or (kind == "failures" and seed != 3)
        return (-150.0 - 0.1 * seed if solved else -1200.0 - seed, 1.0)

    return {
        ("Pendulum-v1", "td3"): td3,
        ("Pendulum-v1", "no_clipped_double_q"): lambda seed: (td3(seed)[0] + untied(seed, 0.5), 1.0),
        ("Pendulum-v1", "no_replay_buffer"): lambda seed: (-1250.0 - 1.5 * seed, 1.0),
    }


@pytest.mark.parametrize(
    "kind, label, shown",
    [
        ("ceiling", "at ceiling", "cannot tell: both arms solve the task at this budget"),
        ("floor", "at floor", "cannot tell: neither arm learns"),
        ("failures", "failures in an arm", "unresolved (failures in an arm)"),
    ],
)  # fmt: skip
def test_an_equivalent_at_the_ceiling_or_floor_or_with_failures_is_never_given_plain(tmp_path, kind, label, shown):
    write_study(tmp_path, ceiling_floor_and_failures(kind), seeds=range(10))
    text = write_report(tmp_path, reps=REPS).read_text()
    report = read_json(tmp_path / "report.json")
    result = entry(tmp_path, "no_clipped_double_q")
    assert (result["test_verdict"], result["label"], result["verdict"], result["qualified_verdict"]) == (
        "equivalent", label, shown, shown
    )  # fmt: skip
    findings = text.split("<!-- generated:findings:start -->")[1].split("<!-- generated:findings:end -->")[0]
    summary = "\n".join(report["summary"]["per_task"])
    for sentences in (findings, summary):
        assert f"{shown}: " in sentences and "**equivalent** within the margin" not in sentences
        assert f"**{shown}" not in sentences  # a verdict with a regime or a label is never bold
    (row,) = [line for line in table_rows(text, "no_clipped_double_q") if "(n = 10)" in line][:1]
    assert shown in row
    learning = report["envs"]["Pendulum-v1"]["learning"]
    assert learning["variants"]["no_clipped_double_q"]["label"] == label
    # the ceiling is the return's: an equivalent overestimation is not labelled by it; a floor or failures are the runs'
    overestimation = entry(tmp_path, "no_clipped_double_q", "overestimation")
    assert overestimation["verdict"] == "descriptive"  # a secondary outcome: an estimate, no verdict
    if overestimation["test_verdict"] == "equivalent":
        assert overestimation["label"] == (None if kind == "ceiling" else label)
    # no_replay_buffer: differs on the return, so nothing to label; its failures differ unless td3 fails too
    assert entry(tmp_path, "no_replay_buffer")["label"] is None
    failures = learning["variants"]["no_replay_buffer"]["failure_rate"]
    assert failures["variant"]["failed"] == 10 and failures["test"].startswith("exact McNemar")
    assert failures["verdict"] == ("no evidence" if kind == "floor" else "differs")
    budget = learning["budget"]
    td3_mean = np.mean([ceiling_floor_and_failures(kind)[("Pendulum-v1", "td3")](seed)[0] for seed in range(10)])
    assert budget["td3_mean"] == pytest.approx(td3_mean) and budget["reference_budget"] == 20_000
    assert budget["fraction"] == pytest.approx((td3_mean + 1218.9) / (-151.9 + 1218.9))
    assert learning["did_not_learn"]["threshold"] == pytest.approx(-1218.9 + 0.05 * (1218.9 - 151.9))
    if kind == "ceiling":
        learned = learning["variants"]["no_clipped_double_q"]["learned"]
        assert learned["estimate"] == "Hodges-Lehmann estimate" and learned["n"] == 10
        assert (learned["verdict"], learned["test_verdict"]) == ("descriptive", "equivalent")  # a family of one


def test_ten_seeds_with_a_clear_effect_differ_and_every_figure_is_written(tmp_path):
    envs = ("Pendulum-v1", "MountainCarContinuous-v0")
    write_study(tmp_path, {**leave_one_out(envs[0]), **leave_one_out(envs[1])}, seeds=range(10))
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "No claim where" not in text
    pendulum = text.split("## MountainCarContinuous-v0")[0]
    worse = table_rows(pendulum, "no_replay_buffer")
    same = table_rows(pendulum, "no_clipped_double_q")
    # primary, last evaluation, area under the curve, overestimation; then the failures table
    assert "| **differs** |" in worse[0] and all("| descriptive |" in row for row in worse[1:4])
    # the same return within ±1: equivalent within ±53.4, fixed from the task's references (not from these runs); both
    # arms end within 53.4 of rl-zoo's -151.9, so the equivalence is at the task's ceiling
    assert "| cannot tell: both arms solve the task at this budget |" in same[0] and all(
        "| descriptive |" in row for row in same[1:3]
    )
    assert f"±{PENDULUM_MARGIN:.1f} (" in pendulum and "5% of the span from a random policy (-1,218.9)" in pendulum
    # the generated findings name the test, n, the family and the shared error rate
    assert re.search(r"\n  - \*\*differs\*\*: no_replay_buffer -1,3\d\d\.\d \[.*\], p 0.002, adjusted 0.0039\.", pendulum)
    assert re.search(
        r"\n  - How: .*n = 10 seed pairs, Wilcoxon signed-rank test .*, family of 2, alpha = 0.05 for differs and "
        r"equivalent together, ",
        pendulum,
    )
    # the runs of no_replay_buffer did not learn (below -1,112.2): 10 of 10, exact McNemar p 2/1024 against td3's 0
    assert "| no_replay_buffer | 10/10 (100%) [69%, 100%] | 0.002 |" in pendulum
    report = read_json(tmp_path / "report.json")
    for env in envs:
        for outcome in ("final_window", "last", "auc", "overestimation"):
            for variant in ("no_replay_buffer", "no_clipped_double_q"):
                result = report["envs"][env]["outcomes"][outcome]["variants"][variant]
                assert {"verdict", "effect", "ci", "p_raw", "p_adjusted", "p_equivalence_adjusted", "mde"} <= set(result)
    assert report["envs"][envs[0]]["failures"]["variants"]["no_replay_buffer"]["did_not_learn"]["failed"] == 10
    assert "Shaffer" in report["error_control"]
    # across tasks: the same effect on both tasks is not task-dependent
    assert report["across_envs"]["components"]["no_replay_buffer"]["task_dependent"] is False

    names = {path.name for path in (tmp_path / "figures").glob("*.png")}
    per_env = ("learning_curves", "overestimation", "performance_profile", "primary_ci", "along_training")
    expected = {f"{env}_{kind}.png" for env in envs for kind in per_env} | {"aggregate_normalized_score.png"}
    assert names == expected
    assert all(f"(figures/{name})" in text for name in expected)
    assert not list(tmp_path.glob("**/*.tmp*"))


def test_a_consistent_shift_is_differs_even_when_two_seeds_collapse(tmp_path):
    # the reviewer's Pendulum example: lower in 10 of 10 seeds, two of them by hundreds (paired t p = 0.109)
    shifts = [-599.8, -368.5, -58.7, -27.1, -26.2, -23.5, -19.9, -13.6, -4.9, -0.9]
    finals = {
        ("Pendulum-v1", "td3"): lambda seed: (-150.0 - 3 * seed, 1.0),
        ("Pendulum-v1", "no_target_networks"): lambda seed: (-150.0 - 3 * seed + shifts[seed], 1.0),
    }
    write_study(tmp_path, finals, seeds=range(10))
    write_report(tmp_path, reps=REPS)
    result = entry(tmp_path, "no_target_networks")
    assert result["verdict"] == "differs" and result["p_raw"] == pytest.approx(2 / 1024)
    assert stats.ttest_1samp(shifts, 0.0).pvalue > 0.1  # the t-test would have missed it


def test_a_variant_that_fails_in_a_fifth_of_its_seeds_is_never_equivalent(tmp_path):
    # 8 of 10 seeds as good as td3 to within 0.5, 2 collapse to the random policy
    finals = {
        ("Pendulum-v1", "td3"): lambda seed: (-150.0 - 3 * seed, 1.0),
        ("Pendulum-v1", "no_target_networks"): lambda seed: (
            -1200.0 if seed in (3, 7) else -150.0 - 3 * seed + abs(untied(seed, 0.5)),
            1.0,
        ),
    }
    write_study(tmp_path, finals, seeds=range(10))
    text = write_report(tmp_path, reps=REPS).read_text()
    assert entry(tmp_path, "no_target_networks")["verdict"] != "equivalent"
    assert "| no_target_networks | 2/10 (20%) [3%, 56%] |" in text


def test_a_tight_null_is_equivalent_and_margins_do_not_move_with_the_results(tmp_path):
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 2, 10)
    finals = {
        ("Pendulum-v1", "td3"): lambda seed: (-150.0 - 3 * seed, 1.0),
        ("Pendulum-v1", "no_clipped_double_q"): lambda seed: (-150.0 - 3 * seed + noise[seed], 1.0),
    }
    write_study(tmp_path, finals, seeds=range(10))
    write_report(tmp_path, reps=REPS)
    before = read_json(tmp_path / "report.json")["envs"]["Pendulum-v1"]["outcomes"]
    assert entry(tmp_path, "no_clipped_double_q")["test_verdict"] == "equivalent"
    # shift and rescale every trained return: the margins stay those of the task's references
    for record in list(iter_runs(tmp_path)):
        record["evaluations"]["mean_return"] = [3 * value + 500 for value in record["evaluations"]["mean_return"]]
        write_run(run_path(tmp_path, record["env"], record["variant"], record["seed"]), record)
    write_report(tmp_path, reps=REPS)
    after = read_json(tmp_path / "report.json")["envs"]["Pendulum-v1"]["outcomes"]
    for outcome in ("final_window", "last", "auc", "overestimation"):
        assert after[outcome]["margin"] == before[outcome]["margin"]
    assert before["final_window"]["margin"] == pytest.approx(PENDULUM_MARGIN)


def test_a_component_with_opposite_real_effects_is_task_dependent(tmp_path):
    envs = ("Pendulum-v1", "MountainCarContinuous-v0")
    finals = {**leave_one_out(envs[0]), **leave_one_out(envs[1])}
    finals[(envs[1], "no_replay_buffer")] = lambda seed: (-150.0 - 3 * seed + 400 + seed / 3, 1.0)  # better there
    write_study(tmp_path, finals, seeds=range(10))
    text = write_report(tmp_path, reps=REPS).read_text()
    component = read_json(tmp_path / "report.json")["across_envs"]["components"]["no_replay_buffer"]
    assert component["task_dependent"] is True and component["p_heterogeneity_adjusted"] <= 0.05
    assert component["per_env"][envs[0]]["d_z"] < 0 < component["per_env"][envs[1]]["d_z"]
    assert re.search(r"- no_replay_buffer: combined .* the Q test rejects one effect on every task \(opposite signs", text)


def test_the_report_follows_the_declared_plan_and_says_when_flags_change_it(tmp_path):
    declared = {"at": "2026-11-25T07:00:00+0000", "finished_runs": 0}
    write_study(tmp_path, leave_one_out(), seeds=range(10), analysis={"primary": "last", "alpha": 0.01},
                analysis_declared=declared)  # fmt: skip
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "The study declared its plan in `study.json` on 2026-11-25T07:00:00+0000; the report follows it." in text
    assert "fixed after its runs" not in text
    assert "- Primary outcome: **return at the last evaluation**" in text and "alpha = 0.01" in text
    text = write_report(tmp_path, reps=REPS, alpha=0.05, margins={"Pendulum-v1": 3.0}).read_text()
    assert "**the plan used here deviates from it**: alpha 0.01 -> 0.05; margins {} -> {'Pendulum-v1': 3.0}." in text
    assert "Pendulum-v1 ±3.0 (" in text and "declared in the study's plan" in text


def test_a_plan_fixed_after_the_runs_says_so_at_the_top(fixed_after_the_runs):
    _, text = fixed_after_the_runs
    # first in the short list right under the findings, in full under Method
    headline = "- This study's analysis plan was fixed after 30 runs had finished."
    assert text.index("## Findings") < text.index(headline) < text.index("## Pendulum-v1")
    full = "- **This study's analysis plan was fixed after 30 runs had finished** (2026-11-25"
    assert text.index("## Method") < text.index(full)


def test_diverged_critics_are_failures_not_averaged(tmp_path):
    finals = {
        ("Pendulum-v1", "td3"): lambda seed: (-150.0 - 3 * seed, 1.0 + 0.1 * seed),
        ("Pendulum-v1", "no_target_networks"): lambda seed: (-160.0 - 3.1 * seed, 8.2e7 if seed < 3 else 2.0 + 0.1 * seed),
    }
    write_study(tmp_path, finals, seeds=range(10))
    text = write_report(tmp_path, reps=REPS).read_text()
    result = entry(tmp_path, "no_target_networks", "overestimation")
    assert result["n"] == 7 and abs(result["effect"]) < 10  # the three diverged seeds are not in the comparison
    assert "| no_target_networks | 0/10 (0%) [0%, 31%] | 1 | 3/10 (30%) [7%, 65%] | 0.25 |" in text
    # one definition of a diverged critic: 'Where TD3 learns' counts the three too, as failures
    assert "| no_target_networks | 10 | 0/10 | 3/7 |" in text or "| no_target_networks | 10 | 0/10 | 3/10 |" in text
    seeds, values = outcome_values(load_study(tmp_path), "Pendulum-v1", "no_target_networks", "overestimation", AnalysisPlan())
    assert seeds.tolist() == [3, 4, 5, 6, 7, 8, 9] and np.all(values < 3)


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
    # the unpaired difference of IQMs is another number (all six runs of each, no pairing)
    assert result.diff == pytest.approx(
        stats.trim_mean(list(variant.values()), 0.25) - stats.trim_mean(list(baseline.values()), 0.25)
    )
    assert result.diff != pytest.approx(result.paired_diff)
    # fewer than 5 runs: the means, no interval
    few = outcome_statistics({"x": [1.0, 2.0], "base": [0.0, 0.0]}, "base", reps=REPS, seeds={"x": [0, 1], "base": [0, 1]})
    assert few["x"].paired_diff == 1.5 and few["x"].diff == 1.5 and few["x"].iqm_ci is None


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
    write_run(run_path(tmp_path, "Pendulum-v1", "no_clipped_double_q", 2), failed)
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
                write_run(path, {**read_run(path), "versions": {"torch": torch, "numpy": "2.4.6"}})
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
    # a later invocation with another plan before any run declares it instead (after runs: test_plan_provenance.py)
    config.analysis = {**declared, "alpha": 0.2}
    open_manifest(config, {}, {})
    assert read_json(tmp_path / "study.json")["analysis"]["alpha"] == 0.2
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
    assert (
        "the report uses the defaults below; changed by the report's options: primary final_window -> auc; "
        "secondary ['last', 'auc', 'overestimation'] ->" in text
    )
    assert read_json(tmp_path / "report.json")["plan"]["primary"] == "auc"


@pytest.fixture(scope="module")
def factorial_study(tmp_path_factory):
    """A full 2^2 factorial of target networks and clipped double Q on 10 seeds, its report written: removing target
    networks costs 100 on average (99.55 to 100.45 by seed), removing clipped double Q nothing, no interaction. The
    report names its folder, here the relative ``study``: a copy of it elsewhere renders to the same bytes."""
    from sb3_ablation.study.plan.variants import resolve_variants

    def outcome(variant):
        removed = not variant.switches["target_networks"]
        return lambda seed: (-150.0 - removed * (100.0 + (seed - 4.5) / 10) - 3 * seed + (seed % 2), 1.0 + 0.1 * seed)

    parent = tmp_path_factory.mktemp("factorial")
    variants = resolve_variants("factorial:target_networks,clipped_double_q")
    write_study(parent / "study", {("Pendulum-v1", v.name): outcome(v) for v in variants}, seeds=range(10))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(parent)
        write_report("study", reps=REPS)
    return parent / "study"


@pytest.fixture(scope="module")
def declared_from_a_commit(tmp_path_factory):
    """Leave-one-out on 5 seeds whose plan was declared, before any run, from a committed study file: its folder, its
    report written."""
    folder = tmp_path_factory.mktemp("declared_from_a_commit")
    declared = {
        "at": "2026-11-26T19:29:54+0000",
        "finished_runs": 0,
        "digest": "ab" * 32,
        "study_file": {"path": "mine.yml", "commit": "8223a82f89f3b5b4a1fee140e6880d9613f0cae3", "modified": False},
    }
    write_study(folder, leave_one_out(), seeds=range(5), analysis={}, analysis_declared=declared)
    write_report(folder, reps=REPS)
    return folder


def test_a_factorial_study_gets_its_factorial_section_with_yates_effects_and_plots(factorial_study, declared_from_a_commit):
    text = (factorial_study / "report.md").read_text()
    assert "## Pendulum-v1: factorial analysis" in text and "Design: full 2^2 factorial" in text
    assert re.search(r"\| target_networks \| 100\.0 \[.*\| \*\*differs\*\*", text)
    for figure in ("factorial_final_window", "half_normal_final_window"):
        assert (factorial_study / "figures" / f"Pendulum-v1_{figure}.png").stat().st_size > 0
    section = read_json(factorial_study / "report.json")["sections"]["Pendulum-v1: factorial analysis"]
    primary = section["outcomes"]["final_window"]
    assert primary["main_effects"]["target_networks"]["verdict"] == "differs"
    assert primary["main_effects"]["target_networks"]["effect"] == pytest.approx(100.0)
    assert list(primary["interactions"]) == ["target_networks x clipped_double_q"] and section["design"]["generators"] == []
    sufficient = primary["smallest_sufficient_set"]
    assert sufficient["keep"] == ["target_networks"] and sufficient["confirmed"] is True
    assert sufficient["observed_set"]["keep"] == ["target_networks"]
    # confirmed by its cell's equivalence test against TD3 in the per-cell family, not by the observed drop
    assert sufficient["confirmation"]["p_equivalence_adjusted"] <= 0.05
    assert "**confirmed**: the cell passes the equivalence test against full TD3 at the family's level" in text
    assert section["learning"]["region"]["whole_design"] is True  # every run learned: no floor cells
    assert section["per_cell_tables"]["final_window"]["label"] is None  # 10 seeds, 3 cells: verdicts attainable
    # a leave-one-out study gets none
    assert "factorial analysis" not in (declared_from_a_commit / "report.md").read_text()


def test_the_report_is_rendered_from_its_model_alone(factorial_study, tmp_path, monkeypatch):
    """analyse_study computes everything once; render_report then needs no run record to write the same files (those
    write_report wrote for the factorial study, here in a copy of its folder)."""
    from sb3_ablation.study.plan.variants import resolve_variants

    shutil.copytree(factorial_study, tmp_path / "study")
    monkeypatch.chdir(tmp_path)  # the folder as the report names it
    study = Path("study")
    files = ("report.md", "report.json", "evaluations.csv")
    written = {name: (study / name).read_bytes() for name in files}
    model = analyse_study(study, reps=REPS)
    assert [f.env for f in model.factorial] == ["Pendulum-v1"] and model.engines is None and model.tuning is None
    primary = next(o for o in model.factorial[0].outcomes if o.key == "final_window")
    verdicts = {primary.result.name(word): c.verdict for word, c in primary.result.main.items()}
    assert verdicts["target_networks"] == "differs" and primary.half_normal is not None
    variants = resolve_variants("factorial:target_networks,clipped_double_q")
    assert set(model.envs[0].figures.curves["mean_return"]) == {v.name for v in variants}
    shutil.rmtree(study / "runs")  # the records are gone: what render needs is in the model
    for name in files:
        (study / name).unlink()
    render_report(model, study)
    assert {name: (study / name).read_bytes() for name in files} == written


def test_the_model_holds_where_td3_learns_and_each_records_provenance(tmp_path):
    """analyse_study adds the failure rules, two-part comparisons and the learning region (analyse/learning.py) and the
    records' provenance (analyse/provenance.py) to the model; the report does not render them yet."""
    from sb3_ablation.study.analyse.provenance import BEFORE_DIGESTS
    from sb3_ablation.study.plan.variants import resolve_variants

    variants = resolve_variants("factorial:target_networks,clipped_double_q")

    def outcome(variant):  # without target networks nothing learns (below the rule's -1,165.55)
        final = (lambda seed: -150.0) if variant.switches["target_networks"] else (lambda seed: -1200.0 - seed / 10)
        return lambda seed: (final(seed) - 3 * seed + (seed % 2), 1.0 + 0.1 * seed)

    write_study(tmp_path, {("Pendulum-v1", v.name): outcome(v) for v in variants}, seeds=range(10))
    model = analyse_study(tmp_path, reps=REPS)
    (learning,) = model.learning
    assert learning.env == "Pendulum-v1" and learning.threshold == -1218.9 + 0.05 * (-151.9 + 1218.9)
    assert learning.two_arm["no_target_networks"].variant.failed == 10 and learning.budget.td3_mean == -163.0
    assert learning.budget.fraction == (-163.0 + 1218.9) / (-151.9 + 1218.9)
    where = model.factorial[0].learning
    assert where.region.enabling == ("target_networks",) and where.two_part["target_networks"].verdict == "differs"
    assert where.ceiling.at_ceiling  # every cell with target networks ends within 53.35 of -151.9
    # clipped double Q changes nothing: equivalent as a main effect, which averages over the cells that never learn
    primary = next(o for o in model.factorial[0].outcomes if o.key == "final_window")
    assert primary.result.main["B"].verdict == "equivalent"
    assert where.main_labels == {"A": AVERAGED_OVER_FLOOR, "B": AVERAGED_OVER_FLOOR}  # A's `differs` says so too
    shown = qualified_verdict(primary.result.main["B"].verdict, where.main_labels["B"])
    assert shown == "unresolved (averaged over floor cells)"
    assert model.provenance.digest is None and len(model.provenance.runs(BEFORE_DIGESTS)) == 40


# ----------------------------------------------------------------------------------------------------------------------
# Group-sequential looks: the report and the study's blocks of seeds
# ----------------------------------------------------------------------------------------------------------------------

LOOKS_PLAN = {"looks": [5, 10], "test": "t", "equivalence_test": "t"}


def test_a_sequential_report_stops_a_clear_effect_at_the_first_look_and_keeps_the_rest_open(tmp_path):
    write_study(tmp_path, leave_one_out(), seeds=range(5), analysis=AnalysisPlan.from_dict(LOOKS_PLAN).to_dict())
    text = write_report(tmp_path, reps=REPS).read_text()
    looks = read_json(tmp_path / "report.json")["envs"]["Pendulum-v1"]["outcomes"]["final_window"]["sequential"]
    stopped, still_open = looks["decisions"]["no_replay_buffer"], looks["decisions"]["no_clipped_double_q"]
    assert looks["looks"] == [5, 10] and looks["reached"] == 1 and looks["seed_order"] == [0, 1, 2, 3, 4]
    assert stopped["verdict"] == "differs" and stopped["look"] == 0 and stopped["p_values"][1] is None
    assert still_open["verdict"] == "open" and still_open["look"] is None and still_open["p_equivalence"] is None
    assert entry(tmp_path, "no_clipped_double_q")["verdict"] == "unresolved"
    assert "open: next block of seeds" in text and "differs at look 1" in text and "conditional bias" in text


@pytest.mark.parametrize("entry_point", ["python", "command"])
def test_a_sequential_study_runs_the_next_block_only_for_open_comparisons(tmp_path, monkeypatch, entry_point):
    """``sb3_ablation.study.conduct`` and ``sb3-ablation study`` run the same blocks and stop at the same look."""
    from sb3_ablation.cli.study import study_main
    from sb3_ablation.study import conduct, flow
    from sb3_ablation.study.plan.config import StudyConfig
    from sb3_ablation.study.run import runner

    outcomes = leave_one_out()
    blocks = []

    def fake_run_study(config, log=print):
        """Write the block's runs as records with known outcomes, as a study would (and its manifest, once)."""
        variants = [v.name for v in config.variant_objects]
        blocks.append((variants, list(config.seeds)))
        if not (tmp_path / "study.json").exists():
            declared = {"analysis": config.analysis, "analysis_declared": {"at": "now", "finished_runs": 0}}
            write_json_atomic(tmp_path / "study.json", manifest(config.envs, variants, config.seeds, **declared))
        for variant in variants:
            for seed in config.seeds:
                final, overestimation = outcomes[("Pendulum-v1", variant)](seed)
                record = run_record("Pendulum-v1", variant, seed, final, overestimation)
                write_run(run_path(tmp_path, "Pendulum-v1", variant, seed), record)
        return runner.StudyResult(out=str(tmp_path), total=len(variants) * len(config.seeds), ok=1)

    monkeypatch.setattr(flow, "run_study", fake_run_study)
    variants = ["td3", "no_replay_buffer", "no_clipped_double_q"]
    if entry_point == "python":
        config = StudyConfig(envs=["Pendulum-v1"], variants=variants, seeds=10, out=str(tmp_path), analysis=LOOKS_PLAN)
        conduct(config)
    else:
        study_file = tmp_path.parent / f"{tmp_path.name}.yml"
        study_file.write_text(yaml.safe_dump({"analysis": LOOKS_PLAN}))
        argv = ["--config", str(study_file), "--env", "Pendulum-v1", "--variants", *variants, "--seeds", "10"]
        # (--verbose 0: the preflight counts the runs without timing them, which test_study_estimate.py checks)
        assert study_main([*argv, "-f", str(tmp_path), "--no-progress", "--verbose", "0"]) == 0
    assert blocks == [
        (["td3", "no_replay_buffer", "no_clipped_double_q"], [0, 1, 2, 3, 4]),
        (["td3", "no_clipped_double_q"], list(range(10))),
    ]
    # the looks as the report reads them (their rendering: the two report tests around this one)
    decisions = analyse_study(tmp_path, reps=REPS).envs[0].outcome("final_window").sequential.decisions
    assert decisions["no_replay_buffer"].look == 0 and decisions["no_clipped_double_q"].verdict == "equivalent"


def test_a_sequential_study_needs_td3_and_enough_seeds(tmp_path):
    from sb3_ablation.study.flow import run_looks
    from sb3_ablation.study.plan.config import StudyConfig, StudyError

    config = StudyConfig(envs=["Pendulum-v1"], variants=["td3", "no_replay_buffer"], seeds=8, out=str(tmp_path / "a"))
    with pytest.raises(StudyError, match=r"analysis.looks ends at 10 seeds but the study has 8"):
        run_looks(dataclasses_replace(config, analysis=LOOKS_PLAN))
    config = StudyConfig(envs=["Pendulum-v1"], variants=["ddpg", "no_replay_buffer"], seeds=10, out=str(tmp_path / "b"))
    with pytest.raises(StudyError, match="td3, which is not among the variants"):
        run_looks(dataclasses_replace(config, analysis=LOOKS_PLAN))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_study_of_the_baseline_alone_describes_it_and_compares_nothing(tmp_path):
    """A pilot (TD3 alone) is described, not reported as missing its baseline."""
    write_study(tmp_path, {("Pendulum-v1", "td3"): leave_one_out()[("Pendulum-v1", "td3")]}, seeds=range(5))
    text = write_report(tmp_path, reps=REPS).read_text()
    assert "- **Pendulum-v1**: only td3 ran; nothing is compared (the tables describe its runs)." in text
    assert "no finished runs of it" not in text
    assert table_rows(text, "td3")[0].count("s4: -162.0") == 1


def test_the_plan_section_names_the_digest_and_the_commit_it_was_declared_from(declared_from_a_commit):
    text = (declared_from_a_commit / "report.md").read_text()
    assert f"Plan digest (SHA-256 of the design and plan): `{'ab' * 32}`." in text
    assert "Declared from `mine.yml` as committed in `8223a82f89f3` (unmodified then)." in text


def test_where_td3_learns_reads_the_confirmatory_seeds_like_the_verdicts(tmp_path):
    """A plan that names its confirmatory seeds: the failure rates, TD3's budget progress and the labels use those seeds
    alone, as the verdicts do; the others are a replication."""
    plan = AnalysisPlan.from_dict({"seeds": list(range(10))}).to_dict()
    write_study(tmp_path, leave_one_out(), seeds=range(12), analysis=plan)
    (learning,) = analyse_study(tmp_path, reps=REPS).learning
    assert learning.budget.n == 10 and learning.budget.td3_mean == np.mean([-150.0 - 3 * seed for seed in range(10)])
    assert learning.two_arm["no_replay_buffer"].variant.n == 10 and set(learning.fates["td3"]) == set(range(10))


def test_a_sequential_equivalence_at_the_ceiling_is_labelled_where_it_stops(tmp_path):
    write_study(tmp_path, leave_one_out(), seeds=range(10), analysis=AnalysisPlan.from_dict(LOOKS_PLAN).to_dict())
    text = write_report(tmp_path, reps=REPS).read_text()
    looks = read_json(tmp_path / "report.json")["envs"]["Pendulum-v1"]["outcomes"]["final_window"]["sequential"]
    decision = looks["decisions"]["no_clipped_double_q"]  # within ±1 of td3, which ends within 53.4 of -151.9
    assert (decision["test_verdict"], decision["verdict"]) == (
        "equivalent",
        "cannot tell: both arms solve the task at this budget",
    )
    assert f"cannot tell: both arms solve the task at this budget at look {decision['look'] + 1}" in text
    assert looks["decisions"]["no_replay_buffer"]["qualified_verdict"] == "differs"
