"""Two-part outcomes, the learning region and its conditional effects, the failure and divergence rules, budget
progress and the ceiling flag (sb3_ablation.study.analyse.two_part, learning_region, run_fates, budget;
sb3_ablation.study.plan.learning_rules), each on a small synthetic study whose answer is known."""

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats
from synthetic_studies import factorial_study

from sb3_ablation.study.analyse.budget import AT_CEILING, budget_progress, ceiling
from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT, UNRESOLVED, compare_family
from sb3_ablation.study.analyse.learning_region import (
    AT_FLOOR,
    AVERAGED_OVER_FLOOR,
    conditional_effects,
    floor_label,
    learning_region,
)
from sb3_ablation.study.analyse.outcomes import outcome_values
from sb3_ablation.study.analyse.results import RunCurves
from sb3_ablation.study.analyse.run_fates import critic_value, largest_abs_reward, run_fate, sound_critics
from sb3_ablation.study.analyse.two_part import (
    FAILURES_IN_AN_ARM,
    exact_stratified_test,
    factorial_two_part,
    failure_rate_upper,
    rare_failure_guard,
    rate,
    return_label,
    strata,
    two_arm,
)
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, PlanError
from sb3_ablation.study.plan.designs import full_factorial, half_fraction
from sb3_ablation.study.plan.learning_rules import LearningRules, learning_threshold, paper_reference, random_return
from sb3_ablation.study.render.labels import is_plain, qualified_verdict, shown_label
from sb3_ablation.study.run.overestimation import episode_summary
from sb3_ablation.switches import SWITCHES

PLAN = AnalysisPlan(test="wilcoxon", equivalence_test="wilcoxon")
RULES = LearningRules()


# -- exact tests ------------------------------------------------------------------------------------------------------


def test_one_stratum_is_fishers_exact_test():
    for table in ([[8, 2], [1, 5]], [[3, 7], [6, 4]], [[0, 10], [10, 0]], [[5, 5], [5, 5]]):
        p, odds_ratio = exact_stratified_test([table])
        assert p == pytest.approx(stats.fisher_exact(table).pvalue, rel=1e-12)
        (a, b), (c, d) = table
        assert odds_ratio == (a * d / b / c if b * c else math.inf if a * d else math.nan)


def test_strata_convolve_and_degenerate_strata_add_nothing():
    # two strata of one run each side, one failure each: S = a1 + a2 takes 0, 1, 2 with 1/4, 1/2, 1/4
    assert exact_stratified_test([[[1, 0], [0, 1]], [[1, 0], [0, 1]]])[0] == 0.5
    assert exact_stratified_test([[[1, 0], [0, 1]], [[0, 1], [1, 0]]])[0] == 1.0
    # a stratum where every run failed fixes its table: the p is the other stratum's
    informative = [[6, 0], [0, 6]]
    assert exact_stratified_test([informative, [[5, 0], [5, 0]]])[0] == exact_stratified_test([informative])[0]


def test_strata_pair_the_cells_that_differ_in_one_factor_or_its_alias_partner():
    full = full_factorial(SWITCHES[:3])
    pairs = strata(full.signs, 0)
    assert len(pairs) == 4 and all(len(on) == len(off) == 1 for on, off in pairs)
    for on, off in pairs:  # the two cells agree on the other factors
        assert np.array_equal(full.signs[on[0], 1:], full.signs[off[0], 1:])
    fraction = half_fraction(SWITCHES)  # I = ABCDEF: flipping A flips F too
    pairs = strata(fraction.signs, 0)
    assert len(pairs) == 16 and all(len(on) == len(off) == 1 for on, off in pairs)
    for on, off in pairs:
        assert np.array_equal(fraction.signs[on[0], 1:5], fraction.signs[off[0], 1:5])


# -- two-part outcomes ------------------------------------------------------------------------------------------------


def test_two_arms_fail_apart_and_compare_the_return_where_both_learned():
    seeds = range(10)
    failed = ({s: s < 6 for s in seeds}, dict.fromkeys(seeds, False))
    returns = ({s: 500.0 + s for s in seeds}, {s: 400.0 + s for s in seeds})
    result = two_arm(failed, returns, margin=50.0)
    assert (result.variant.failed, result.baseline.failed) == (6, 0)
    assert result.p_failure == 2 * 0.5**6  # exact McNemar: 6 discordant seeds, all one way
    assert result.learned_seeds == (6, 7, 8, 9) and result.learned.n == 4 and result.learned.effect == 100.0


def test_no_return_equivalence_where_an_arm_has_failures():
    (equivalent,) = compare_family({"x": np.array([1.0, -1.0] * 5)}, 0.05, 50.0, test="t", equivalence_test="t").values()
    assert equivalent.verdict == EQUIVALENT
    assert return_label(equivalent, rate([False] * 8 + [True] * 2), rate([False] * 10)) == FAILURES_IN_AN_ARM
    assert return_label(equivalent, rate([False] * 10), rate([True] + [False] * 9)) == FAILURES_IN_AN_ARM
    assert return_label(equivalent, rate([False] * 10), rate([False] * 10)) is None
    assert qualified_verdict(EQUIVALENT, FAILURES_IN_AN_ARM) == "unresolved (failures in an arm)"


def synthetic_factorial(seeds=10):
    """A 2^3 (replay buffer, target networks, clipped double Q) where nothing learns without the replay buffer, a
    quarter of the seeds fail without target networks, and clipped double Q adds exactly 30 among the runs that learn."""
    design = full_factorial(["replay_buffer", "target_networks", "clipped_double_q"])
    returns = np.zeros((len(design.cells), seeds))
    failed = np.zeros_like(returns)
    for row, cell in enumerate(design.cells):
        for seed in range(seeds):
            if not cell["replay_buffer"] or (not cell["target_networks"] and seed < 8):
                failed[row, seed], returns[row, seed] = 1, 10.0 + seed
            else:
                returns[row, seed] = 1000.0 + 10 * seed + 30 * cell["clipped_double_q"]
    return design, returns, failed


def test_a_factorial_failure_rate_is_tested_within_strata_and_the_return_among_the_runs_that_learned():
    design, returns, failed = synthetic_factorial()
    parts = factorial_two_part(design, returns, failed, alpha=0.05)
    replay, target, clipped = (parts[f] for f in design.factors)
    assert (replay.on.failed, replay.on.n, replay.off.failed, replay.off.n) == (16, 40, 40, 40)
    assert replay.verdict == DIFFERS and replay.strata == 4 and replay.odds_ratio == 0.0
    assert target.verdict == DIFFERS and (target.off.failed, target.on.failed) == (36, 20)
    # clipped double Q does not change who fails; among the runs that learned it adds exactly 30
    assert clipped.p_failure == pytest.approx(1.0, abs=1e-12) and clipped.odds_ratio == 1.0
    assert clipped.verdict == "no evidence"
    assert clipped.learned_effect == pytest.approx(30.0, abs=1e-9) and clipped.p_learned < 0.01
    assert clipped.learned_strata == 2  # the strata with replay on
    assert parts == factorial_two_part(design, returns, failed, alpha=0.05)  # a fixed permutation seed


# -- the learning region ----------------------------------------------------------------------------------------------


def test_the_region_keeps_the_components_without_which_runs_fail_and_effects_are_read_there():
    design, returns, failed = synthetic_factorial()
    region = learning_region(design, failed, RULES)
    assert region.enabling == ("replay_buffer", "target_networks")
    assert [design.cells[r]["clipped_double_q"] for r in region.rows] == [False, True]
    assert region.steps[0][0].factor == "replay_buffer" and region.steps[0][0].rate == 1.0
    assert (region.steps[1][0].factor, region.steps[1][0].failed, region.steps[1][0].n) == ("target_networks", 16, 20)
    effects = conditional_effects(design, returns, list(range(10)), region, PLAN, margin=50.0)
    assert effects.factors == ("clipped_double_q",) and effects.seeds == tuple(range(10))
    clipped = effects.effects["clipped_double_q"]
    assert clipped.differences == (30.0,) * 10 and clipped.verdict == DIFFERS
    # nothing fails: the region is the whole design
    assert learning_region(design, np.zeros_like(failed), RULES).is_whole_design


def test_no_equivalent_for_a_main_effect_that_averages_over_floor_cells():
    design, _, failed = synthetic_factorial()
    region = learning_region(design, failed, RULES)
    # an effect of +/-1 per seed is equivalent within a margin of 50...
    (main,) = compare_family({"x": np.array([1.0, -1.0] * 5)}, 0.05, 50.0, test="t", equivalence_test="t").values()
    assert main.verdict == EQUIVALENT
    assert floor_label(main, region) == AVERAGED_OVER_FLOOR  # ...but not where it averages over a floor
    assert qualified_verdict(main.verdict, floor_label(main, region)) == "unresolved (averaged over floor cells)"
    assert floor_label(main, learning_region(design, np.zeros_like(failed), RULES)) is None
    (differs,) = compare_family({"x": np.arange(10.0) + 100}, 0.05, 50.0).values()
    assert floor_label(differs, region) == AVERAGED_OVER_FLOOR  # a `differs` there says so too
    assert qualified_verdict(differs.verdict, AVERAGED_OVER_FLOOR) == "differs (averaged over floor cells)"
    assert floor_label(differs, learning_region(design, np.zeros_like(failed), RULES)) is None


# -- the failure and divergence rules ---------------------------------------------------------------------------------


def test_episode_summaries_record_the_largest_absolute_reward():
    summary = episode_summary(np.array([1.0, 2.0]), np.array([0.5, -3.0, 1.0]), terminated=True, gamma=0.9)
    assert summary["max_abs_reward"] == 3.0


def run_with(q_per_state, max_abs_reward=None, score=200.0, steps=100, final_return=500.0):
    episode = {"steps": steps, "terminated": True, "states": steps, "q_sum": q_per_state * steps,
               "return_sum": 0.0, "abs_return_sum": 0.0}  # fmt: skip
    if max_abs_reward is not None:
        episode["max_abs_reward"] = max_abs_reward
    return RunCurves(
        seed=0, timesteps=np.array([0, 100]), values={"mean_return": np.array([0.0, final_return])},
        episode_returns=[np.array([score]), np.array([score])], value_episodes=[[episode], [episode]],
    )  # fmt: skip


def test_a_critic_diverges_beyond_the_value_its_own_rewards_allow_without_any_reference():
    rules = LearningRules(q_bound_factor=2.0)
    # max |reward| 1 at gamma 0.9: values are within 10, the rule's bound 20
    inside, beyond = run_with(19.0, max_abs_reward=1.0), run_with(21.0, max_abs_reward=1.0)
    assert largest_abs_reward(inside, 0.9, 1000) == (1.0, True) and critic_value(beyond) == 21.0
    fate = run_fate(inside, None, 0.9, 1000, rules, PLAN)  # no threshold: no learning rule, still a divergence rule
    assert (fate.did_not_learn, fate.diverged, fate.q_bound, fate.exact_bound) == (None, False, pytest.approx(20.0), True)
    assert run_fate(beyond, None, 0.9, 1000, rules, PLAN).diverged and run_fate(beyond, None, 0.9, 1000, rules, PLAN).failed
    fates = {0: run_fate(inside, None, 0.9, 1000, rules, PLAN), 1: run_fate(beyond, None, 0.9, 1000, rules, PLAN)}
    assert sound_critics(fates) == [0]  # the overestimation is averaged over seed 0 only
    # a record without max_abs_reward: bounded from below by the score per scored step (200 / 100)
    old = run_with(21.0, score=200.0, steps=100)
    assert largest_abs_reward(old, 0.9, 1000) == (2.0, False)
    fate = run_fate(old, None, 0.9, 1000, rules, PLAN)
    assert (fate.q_bound, fate.diverged, fate.exact_bound) == (pytest.approx(40.0), False, False)
    nan_critic = run_with(math.nan, max_abs_reward=1.0)
    nan_critic.value_episodes[-1][0]["q_sum"] = None  # JSON has no NaN
    assert critic_value(nan_critic) == math.inf and run_fate(nan_critic, None, 0.9, 1000, rules, PLAN).diverged


def test_did_not_learn_is_the_measured_random_return_plus_a_declared_fraction_of_the_span():
    assert random_return("Hopper-v5")[0] == 17.2 and paper_reference("Hopper-v5")[:2] == (1_000_000, 3606.4)
    threshold, how = learning_threshold("Hopper-v5", LearningRules(learning_fraction=0.1))
    assert threshold == 17.2 + 0.1 * (3606.4 - 17.2) and "17.2, measured" in how
    assert random_return("Pendulum-v1")[0] == -1218.9  # measured by the package already: `random` itself
    assert learning_threshold("NoSuchTask-v0", RULES) == (None, learning_threshold("NoSuchTask-v0", RULES)[1])
    assert "no measured random return" in learning_threshold("NoSuchTask-v0", RULES)[1]
    fate = run_fate(run_with(1.0, max_abs_reward=1.0, final_return=100.0), 196.7, 0.99, 1000, RULES, PLAN)
    assert fate.did_not_learn and not fate.diverged and fate.failed
    with pytest.raises(PlanError, match="unknown key 'q_bound' \\(did you mean 'q_bound_factor'\\?\\)"):
        LearningRules.from_dict({"q_bound": 3})
    with pytest.raises(PlanError, match="learning_fraction must be a number in \\(0, 1\\], got 2"):
        LearningRules(learning_fraction=2)


# -- budget and ceiling -----------------------------------------------------------------------------------------------


def test_budget_progress_is_td3s_return_as_a_fraction_of_the_span_to_the_paper():
    progress = budget_progress("Hopper-v5", [500.0, 700.0, np.nan], 100_000)
    assert progress.n == 2 and progress.td3_mean == 600.0 and progress.reference_budget == 1_000_000
    assert progress.fraction == (600.0 - 17.2) / (3606.4 - 17.2) and progress.best == (700.0 - 17.2) / (3606.4 - 17.2)
    assert budget_progress("NoSuchTask-v0", [1.0], 1000) is None


def test_a_task_is_at_its_ceiling_only_where_every_arm_sits_close_to_the_reference_and_to_each_other():
    rules = LearningRules(ceiling_fraction=0.05)  # Pendulum: 5% of (-151.9 - -1218.9) = 53.35
    solved = {"td3": -152.0, "no_delayed_policy_update": -150.7, "no_target_policy_smoothing": -157.5}
    flag = ceiling("Pendulum-v1", solved, rules)
    assert flag.at_ceiling and flag.distance == pytest.approx(53.35) and flag.lowest == ("no_target_policy_smoothing", -157.5)
    assert not ceiling("Pendulum-v1", {**solved, "no_replay_buffer": -400.0}, rules).at_ceiling
    assert ceiling("NoSuchTask-v0", solved, rules) is None
    assert (
        qualified_verdict(EQUIVALENT, AT_CEILING if flag.at_ceiling else None)
        == "cannot tell: both arms solve the task at this budget"
    )
    assert qualified_verdict(EQUIVALENT, AT_FLOOR) == "cannot tell: neither arm learns"
    assert qualified_verdict(UNRESOLVED, AT_CEILING) == UNRESOLVED


# -- the partitioned rule's failure guard on an equivalence ----------------------------------------------------------


def test_the_failure_bound_is_the_exact_one_sided_clopper_pearson_bound():
    # no failure in n: (1 - p) ** n = level; k failures: the binomial tail at the bound is the level
    assert failure_rate_upper(0, 10, 0.05) == pytest.approx(1 - 0.05**0.1, rel=1e-12)
    assert stats.binom.cdf(2, 10, failure_rate_upper(2, 10, 0.01)) == pytest.approx(0.01, rel=1e-9)
    assert failure_rate_upper(10, 10, 0.05) == 1.0


def test_an_equivalence_is_withheld_where_the_seeds_cannot_bound_what_rare_failures_cost():
    # a clean run 5 above the threshold, margin 1: no failure in 10 seeds bounds the rate at 0.38 (alpha / 6), which
    # could cost 1.9 > 1; 22 seeds bound it at 0.196 (cost 0.98), 21 at 0.204 (1.02)
    line = rare_failure_guard(rate([False] * 10), 0.0, -5.0, 1.0, 0.05 / 6)
    assert line == (
        "cannot tell: 10 seeds cannot rule out rare failures that would cost the margin; 22 seeds without a failure would"
    )
    assert rare_failure_guard(rate([False] * 22), 0.0, -5.0, 1.0, 0.05 / 6) is None
    assert rare_failure_guard(rate([False] * 21), 0.0, -5.0, 1.0, 0.05 / 6).startswith("cannot tell: 21 seeds")
    # given: a failure cannot cost the margin (cost 2 against margin 1: 0.38 * 2 = 0.76), or no margin to guard
    assert rare_failure_guard(rate([False] * 10), 0.0, -2.0, 1.0, 0.05 / 6) is None
    assert rare_failure_guard(rate([False] * 10), 0.0, -5.0, math.nan, 0.05 / 6) is None
    # no failure threshold: what a failure costs is unbounded
    assert "no failure threshold" in rare_failure_guard(rate([False] * 10), 0.0, None, 1.0, 0.05 / 6)
    # the report shows the line in place of the equivalence, not in bold, for the return only
    assert qualified_verdict(EQUIVALENT, line) == line and not is_plain(line)
    assert qualified_verdict(DIFFERS, line) == DIFFERS
    assert shown_label(line, is_return=False) is None and shown_label(line) == line


def test_only_partitioned_plans_guard_their_equivalences():
    """A task whose runs learn but end far below the ceiling (a failure costs about 566, the margin is 50): a plan
    declaring `claims: partitioned` withholds the equivalences 10 seeds cannot guard; a committed plan's labels are
    those it always had."""
    from sb3_ablation.study.analyse.learning import env_learning

    factors = ["clipped_double_q", "target_networks"]
    data = factorial_study(factors, lambda switches, seed: -600.0 + seed / 10 + switches["clipped_double_q"])
    committed = env_learning(data, "Pendulum-v1", "td3", PLAN, RULES, margin=50.0)
    assert len(committed.labels) == 3 and set(committed.labels.values()) == {None}
    partitioned = dataclasses.replace(PLAN, claims="partitioned")
    guarded = env_learning(data, "Pendulum-v1", "td3", partitioned, RULES, margin=50.0)
    cost = -600.0 + 0.45 + 1.0 - guarded.threshold  # the baseline's mean minus the failure threshold
    needed = math.ceil(math.log(0.05 / 3) / math.log1p(-50.0 / cost))  # three comparisons: alpha / 3 each
    line = f"cannot tell: 10 seeds cannot rule out rare failures that would cost the margin; {needed} seeds without a "
    assert set(guarded.labels.values()) == {line + "failure would"}
    # a margin a failure cannot cost at this bound (0.336 * 566 = 190): the equivalences stand
    given = env_learning(data, "Pendulum-v1", "td3", partitioned, RULES, margin=200.0)
    assert set(given.labels.values()) == {None}


# -- a whole task: env_learning and factorial_learning ----------------------------------------------------------------


def synthetic_study():
    """A 2^3 on Pendulum-v1 (replay buffer, target networks, clipped double Q), 10 seeds: nothing learns without the
    replay buffer (-1,200, below the rule's -1,165.55); with it the runs end near rl-zoo's -151.9, clipped double Q
    adding exactly 3 in every seed."""

    def final(switches, seed):
        learned = -160.0 + seed / 10 + 3 * switches["clipped_double_q"]
        return learned if switches["replay_buffer"] else -1200.0 - seed

    return factorial_study(["replay_buffer", "target_networks", "clipped_double_q"], final)


def test_a_task_in_two_parts_and_its_factorial_read_where_td3_learns():
    from sb3_ablation.study.analyse.learning import env_learning, factorial_learning

    data = synthetic_study()
    learning = env_learning(data, "Pendulum-v1", "td3", PLAN, RULES, margin=50.0)
    assert learning.threshold == -1218.9 + 0.05 * (-151.9 + 1218.9)
    no_replay = learning.two_arm["no_replay_buffer"]
    assert (no_replay.variant.failed, no_replay.baseline.failed, no_replay.p_failure) == (10, 0, 2 * 0.5**10)
    assert no_replay.learned is None  # no seed where both learned
    no_clipped = learning.two_arm["no_clipped_double_q"]
    assert no_clipped.p_failure == 1.0 and no_clipped.learned.differences == pytest.approx((-3.0,) * 10)
    assert learning.budget.n == 10 and learning.budget.td3_mean == pytest.approx(-157.0 + 0.45)
    assert not any(f.diverged for runs in learning.fates.values() for f in runs.values())  # no Q measured: not judged

    (equivalent,) = compare_family({"A": np.array([1.0, -1.0] * 5)}, 0.05, 50.0, test="t", equivalence_test="t").values()
    result = factorial_learning(data, "Pendulum-v1", learning.fates, PLAN, RULES, 50.0, main={"A": equivalent})
    assert result.region.enabling == ("replay_buffer",) and len(result.region.rows) == 4
    assert result.two_part["replay_buffer"].verdict == DIFFERS and result.two_part["clipped_double_q"].verdict != DIFFERS
    assert set(result.two_part_in_region) == {"target_networks", "clipped_double_q"}
    assert result.conditional.effects["clipped_double_q"].differences == pytest.approx((3.0,) * 10)
    assert result.ceiling.at_ceiling  # every cell with the replay buffer ends within 53.35 of -151.9
    assert result.main_labels == {"A": AVERAGED_OVER_FLOOR}


def test_the_overestimation_is_averaged_only_over_critics_within_what_their_rewards_allow():
    """A critic beyond q_bound_factor * max |reward| / (1 - gamma) is a failure, not a number in the average, even on a
    task with no reference (no value span)."""
    runs = []
    for seed, q in enumerate([5.0, 6.0, 1e6]):
        run = run_with(q, max_abs_reward=1.0)
        runs.append(dataclasses.replace(run, seed=seed, values={**run.values, "overestimation": np.array([0.0, q])}))
    data = SimpleNamespace(
        runs={"NoSuchTask-v0": {"td3": runs}}, manifest={"hyperparams": {"NoSuchTask-v0": {"td3": {"gamma": 0.9}}}}
    )
    seeds, values = outcome_values(data, "NoSuchTask-v0", "td3", "overestimation", PLAN)  # bound: 10 * 1 / 0.1 = 100
    assert seeds.tolist() == [0, 1] and values.tolist() == [5.0, 6.0]
    seeds, _ = outcome_values(data, "NoSuchTask-v0", "td3", "final_window", PLAN)
    assert seeds.tolist() == [0, 1, 2]  # the returns of every run count
