"""Before a study runs: whether its seeds can reach a verdict, and its runs' estimated time."""

import pytest

from sb3_ablation.cli.study import study_main
from sb3_ablation.study.analyse.feasibility import FamilyReach, family_reach
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.variants import expand_preset, parse_variant
from sb3_ablation.study.run.estimate import RunCost, StudyEstimate, format_duration, mean_cost

LEAVE_ONE_OUT = [parse_variant(name) for name in expand_preset("leave-one-out")]


def test_five_seeds_cannot_reach_differs_in_a_family_of_six_with_equivalence_claims():
    # Pendulum-v1 at 20k steps has a reference, so a margin: 6 comparisons x 2 claims share alpha = 0.05
    (reach,) = family_reach(AnalysisPlan(), ["Pendulum-v1"], LEAVE_ONE_OUT, list(range(5)), {"Pendulum-v1": 20_000})
    assert (reach.comparisons, reach.hypotheses_each, reach.n) == (6, 2, 5)
    assert reach.smallest_p == 2 / 2**5 and reach.level == 0.05 / 12
    assert not reach.reachable and reach.seeds_needed == 9  # 2 / 2^9 = 0.0039 <= 0.0042 < 2 / 2^8
    assert reach.line() == (
        "Pendulum-v1: 6 comparisons, 5 seeds: the smallest p is 0.062 against the first step's level 0.0042 (0.05 over "
        "12 hypotheses): no comparison can be differs; give at least 9 seeds (--seeds 9)"
    )


def test_without_a_margin_or_with_differs_claims_only_each_comparison_is_one_hypothesis():
    plan = AnalysisPlan(claims="differs")
    (reach,) = family_reach(plan, ["Pendulum-v1"], LEAVE_ONE_OUT, list(range(8)), {"Pendulum-v1": 20_000})
    assert (reach.hypotheses_each, reach.level) == (1, 0.05 / 6)
    assert reach.reachable and reach.line().endswith(": a differs is possible")  # 2 / 2^8 = 0.0078 <= 0.0083
    # no reference at 1,234 steps, so no margin: one hypothesis each
    (unmarked,) = family_reach(AnalysisPlan(), ["Pendulum-v1"], LEAVE_ONE_OUT, list(range(7)), {"Pendulum-v1": 1_234})
    assert unmarked.hypotheses_each == 1


def test_the_line_names_the_fewest_comparisons_that_would_do():
    reach = FamilyReach("Pendulum-v1", comparisons=6, hypotheses_each=1, alpha=0.05, n=6, test="wilcoxon")
    # 2 / 2^6 = 0.031: reachable with at most one comparison (0.05 / 1), not with two (0.025)
    assert (reach.reachable, reach.most_comparisons, reach.seeds_needed) == (False, 1, 8)  # 2 / 2^8 <= 0.05 / 6
    assert reach.line().endswith("give at least 8 seeds (--seeds 8), or at most 1 comparison with these seeds")


def test_a_study_without_a_baseline_or_comparisons_has_no_family():
    td3 = [parse_variant("td3")]
    assert family_reach(AnalysisPlan(), ["Pendulum-v1"], td3, [0, 1], {"Pendulum-v1": 20_000}) == []
    assert family_reach(AnalysisPlan(), ["Pendulum-v1"], LEAVE_ONE_OUT[1:], [0, 1], {"Pendulum-v1": 20_000}) == []


def test_study_refuses_a_design_that_can_reach_no_verdict_in_one_line_before_timing_anything(tmp_path, capsys):
    out = tmp_path / "study"
    assert study_main(["--config", "pendulum", "--seeds", "5", "--out", str(out), "--no-progress"]) == 2
    said = capsys.readouterr()
    assert said.err == (
        "sb3-ablation study: Pendulum-v1: 6 comparisons, 5 seeds: the smallest p is 0.062 against the first step's "
        "level 0.0042 (0.05 over 12 hypotheses): no comparison can be differs; give at least 9 seeds (--seeds 9) (a "
        "short try, with --quick, runs anyway)\n"
    )
    assert said.out == "" and not out.exists()


def test_the_estimate_line():
    cost = RunCost(
        build=1.0, warm_up_step=0.001, training_step=0.01, evaluation=0.5, learning_starts=1_000, n_timesteps=11_000,
        evaluations=21,
    )  # fmt: skip
    assert cost.seconds == pytest.approx(1.0 + 1.0 + 100.0 + 10.5)
    assert StudyEstimate(70, 2, 7 * 3600 / 2, start_up=12.4).line() == (
        "70 runs on 2 workers: about 3 h 30 min on this machine at its present load (the workers' start-up, 12 s, and "
        "200 timed steps of each phase of one run per env, in every worker at once)"
    )
    assert (
        StudyEstimate(2, 1, None, "too short to be worth timing").line() == "2 runs on 1 worker (too short to be worth timing)"
    )
    assert [format_duration(s) for s in (44, 95, 3599, 3600 * 2 + 60 * 5)] == ["44 s", "2 min", "1 h 00 min", "2 h 05 min"]


def test_one_comparison_is_said_in_the_singular():
    reach = FamilyReach("Pendulum-v1", comparisons=1, hypotheses_each=1, alpha=0.05, n=2, test="wilcoxon")
    assert reach.line() == (
        "Pendulum-v1: 1 comparison, 2 seeds: the smallest p is 0.5 against the first step's level 0.05 (0.05 over 1 "
        "hypothesis): no comparison can be differs; give at least 6 seeds (--seeds 6)"
    )


def test_the_mean_of_a_run_timed_in_several_workers_averages_the_timed_pieces_only():
    one = RunCost(build=1.0, warm_up_step=0.001, training_step=0.01, evaluation=0.5, learning_starts=1_000,
                  n_timesteps=11_000, evaluations=21)  # fmt: skip
    other = RunCost(build=3.0, warm_up_step=0.003, training_step=0.03, evaluation=1.5, learning_starts=1_000,
                    n_timesteps=11_000, evaluations=21)  # fmt: skip
    assert mean_cost([one, other]) == RunCost(
        build=2.0, warm_up_step=0.002, training_step=0.02, evaluation=1.0, learning_starts=1_000, n_timesteps=11_000,
        evaluations=21,
    )  # fmt: skip
