"""A factorial's report where TD3 learns (sb3_ablation.study.analyse.factorial, effects, learning;
sb3_ablation.study.render.factorial, tables), each on a small synthetic factorial whose answer is known: the learning
region and the conditional effects within it, the label of a main effect averaged over floor cells, the smallest
sufficient set confirmed by a test (both ways), an interaction's margin on the simple-effect scale, and the per-cell
tables that cannot reach a verdict at their seeds."""

import re

import numpy as np
import pytest
from synthetic_studies import factorial_study as study

from sb3_ablation.study.analyse.effects import confirm_sufficient, smallest_sufficient_set
from sb3_ablation.study.analyse.factorial import analyse_outcome, attainable_verdicts, study_design
from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT, UNRESOLVED, compare_family
from sb3_ablation.study.analyse.learning import env_learning, factorial_learning
from sb3_ablation.study.analyse.paired_methods import smallest_p
from sb3_ablation.study.analyse.report_model import Margin, OutcomeResult
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.designs import full_factorial
from sb3_ablation.study.plan.learning_rules import LearningRules
from sb3_ablation.study.plan.variants import canonical_name, parse_variant
from sb3_ablation.study.render.factorial import factorial_learning_json, factorial_learning_lines
from sb3_ablation.study.render.tables import per_cell_heading
from sb3_ablation.switches import SWITCHES

PLAN = AnalysisPlan(test="wilcoxon", equivalence_test="wilcoxon")
RULES = LearningRules()
ENV = "Pendulum-v1"


def jitter(switches, seed, scale=0.01):
    """A small noise of its own per run: no ties or zero differences (which send the Wilcoxon test to a slow
    permutation path)."""
    cell = sum(1 << i for i, name in enumerate(SWITCHES) if switches[name])
    return scale * float(np.random.default_rng([cell, seed]).normal())


def floor_study():
    """Nothing learns without the replay buffer (-1,200, below the rule's -1,165.55); with it the runs end near
    rl-zoo's -151.9: clipped double Q adds 3 in every seed, target networks nothing (up to a jitter of 0.01)."""

    def final(switches, seed):
        if not switches["replay_buffer"]:
            return -1200.0 - seed + jitter(switches, seed)
        return -160.0 + seed / 10 + 3 * switches["clipped_double_q"] + jitter(switches, seed)

    return study(["replay_buffer", "target_networks", "clipped_double_q"], final)


def factorial_of(data, margin=50.0, plan=PLAN):
    design, variant_of = study_design(data, ENV)
    return design, analyse_outcome(data, ENV, design, variant_of, "final_window", plan, margin)


# -- the learning region, its conditional effects and the floor label ------------------------------------------------


def test_where_td3_learns_is_rendered_with_the_region_the_failure_rates_and_the_conditional_effects():
    data = floor_study()
    design, result = factorial_of(data)
    fates = env_learning(data, ENV, "td3", PLAN, RULES, margin=50.0).fates
    learning = factorial_learning(data, ENV, fates, PLAN, RULES, 50.0, main=result.main)
    section = factorial_learning_json(learning, result.main, "Hodges-Lehmann estimate")

    region = section["region"]
    assert region["enabling"] == ["replay_buffer"] and not region["whole_design"]
    assert (region["n_cells"], region["design_cells"]) == (4, 8)
    assert all(parse_variant(cell).switches["replay_buffer"] for cell in region["cells"])
    assert region["steps"][0][0] == {"factor": "replay_buffer", "failed": 40, "n": 40, "rate": 1.0}
    assert "from the failure outcome alone" in region["rule"] and region["level"] == RULES.region_failure_rate

    replay, target, clipped = (section["factors"][f] for f in design.factors)
    assert (replay["failure_on"]["failed"], replay["failure_off"]["failed"]) == (0, 40)
    assert replay["failure_verdict"] == DIFFERS and replay["failure_p"] < 1e-10
    assert replay["in_region"] is None and replay["conditional"] is None  # kept on in the region: no effect there
    assert clipped["failure_verdict"] == "no evidence" and clipped["in_region"]["failure_on"]["failed"] == 0
    # within the region clipped double Q adds exactly 3 in every seed; target networks nothing at all
    assert clipped["conditional"]["effect"] == pytest.approx(3.0, abs=0.05) and clipped["conditional"]["verdict"] == DIFFERS
    assert clipped["conditional"]["estimate"] == "Hodges-Lehmann estimate"
    assert target["conditional"]["differences"] == pytest.approx([0.0] * 10, abs=0.05)
    assert target["conditional"]["test_verdict"] == EQUIVALENT  # the test's; `verdict` is the one shown
    assert target["conditional"]["verdict"] == target["conditional"]["verdict_shown"]
    # every region cell ends within 53.35 of rl-zoo's -151.9: an equivalence there is the task's ceiling
    assert section["ceiling"]["at_ceiling"] is True
    assert target["conditional"]["verdict_shown"] == "cannot tell: both arms solve the task at this budget"

    # the main effect of target networks is about 0 in every seed: the test says equivalent, but it averages over the
    # cells without the replay buffer, where nothing learns
    assert result.main["B"].verdict == EQUIVALENT
    assert target["main_effect"]["label"] == "averaged over floor cells"
    assert target["main_effect"]["verdict_of_test"] == EQUIVALENT
    assert target["main_verdict_label"] == "unresolved (averaged over floor cells)"
    assert replay["main_verdict_label"] == f"{DIFFERS} (averaged over floor cells)"

    text = "\n".join(factorial_learning_lines(learning, result.main, "Hodges-Lehmann estimate", "final return"))
    assert "the 4 of 8 cells with **replay_buffer** on" in text
    assert "without replay_buffer 40/40 runs failed (100%): kept on" in text
    assert "| clipped_double_q | learning region | 0/20 (0%) | 0/20 (0%) |" in text
    assert "| clipped_double_q | 3.0 [" in text
    assert "**At ceiling**" in text
    assert "Main effects of the final return averaged over floor cells, so none is read as `equivalent`" in text
    # one verdict: the test's own `equivalent` is in report.json (verdict_of_test), not beside the verdict shown
    assert re.search(r"target_networks -?0\.0 \[.*?\] `unresolved \(averaged over floor cells\)`;", text)
    assert "the test alone" not in text


def test_without_floor_cells_the_main_effects_are_read_over_the_whole_design():
    # clipped double Q adds 3 in every run, nothing fails: the region is the whole design
    data = study(
        ["target_networks", "clipped_double_q"],
        lambda s, seed: -160.0 + seed / 10 + 3 * s["clipped_double_q"] + jitter(s, seed),
    )
    _, result = factorial_of(data)
    fates = env_learning(data, ENV, "td3", PLAN, RULES, margin=50.0).fates
    learning = factorial_learning(data, ENV, fates, PLAN, RULES, 50.0, main=result.main)
    section = factorial_learning_json(learning, result.main, "Hodges-Lehmann estimate")
    assert section["region"]["whole_design"] and section["region"]["enabling"] == []
    target = section["factors"]["target_networks"]
    assert target["main_effect"]["label"] == "over the whole design (no floor cells)"
    assert target["main_verdict_label"] == EQUIVALENT == target["main_effect"]["verdict_of_test"]
    # the conditional effects are the main effects here
    assert section["factors"]["clipped_double_q"]["conditional"]["effect"] == pytest.approx(result.main["B"].effect)


# -- an interaction's margin on the simple-effect scale ---------------------------------------------------------------


@pytest.mark.parametrize(("apart", "within"), [(40.0, True), (60.0, False)])
def test_an_interactions_margin_bounds_how_far_its_two_simple_effects_are_apart(apart, within):
    """Target networks' effect is +apart/2 with clipped double Q on and -apart/2 without it: the two simple effects
    differ by ``apart`` and the Yates interaction is apart/2. Within the margin of 50 only where apart <= 50."""
    noise = np.random.default_rng(3).normal(0, 1.0, (4, 10))

    def final(switches, seed):
        sign = (1 if switches["target_networks"] else -1) * (1 if switches["clipped_double_q"] else -1)
        cell = 2 * switches["target_networks"] + switches["clipped_double_q"]
        return -160.0 + apart / 4 * sign + noise[cell, seed]

    _, result = factorial_of(study(["target_networks", "clipped_double_q"], final), margin=50.0)
    interaction = result.two["AB"]
    assert result.interaction_margin == 25.0 == interaction.margin
    assert interaction.effect == pytest.approx(apart / 2, abs=1.0) and interaction.verdict == DIFFERS
    assert interaction.within_margin is within
    # the same test as the difference of the simple effects (twice the Yates effect) at the margin itself
    (simple,) = compare_family(
        {"AB": 2 * np.array(interaction.differences)}, 0.05, 50.0, test="wilcoxon", equivalence_test="wilcoxon"
    ).values()
    assert simple.p_equivalence == pytest.approx(interaction.p_equivalence, rel=1e-12)


# -- the smallest sufficient set, confirmed by a test -----------------------------------------------------------------


def sufficiency_values(seeds, sd, rng_seed=0):
    """A 2^4 where A is essential, B and C cover for each other (C slightly better), D costs 1: keeping A and C loses
    1, within a margin of 5."""
    design = full_factorial(SWITCHES[:4])
    rng = np.random.default_rng(rng_seed)
    truth = np.array([
        100.0 - 40 * (not c[SWITCHES[0]]) - 30 * (not c[SWITCHES[1]] and not c[SWITCHES[2]]) - 2 * (not c[SWITCHES[2]])
        - 1 * (not c[SWITCHES[3]])
        for c in design.cells
    ])  # fmt: skip
    return design, truth[:, None] + rng.normal(0, sd, (len(design.cells), seeds))


def per_cell_family(design, values, margin=5.0):
    """Every cell against the all-on cell, one family, as the report's per-cell tables."""
    names = [canonical_name({**dict.fromkeys(SWITCHES, True), **cell}) for cell in design.cells]
    every_on = design.index(dict.fromkeys(SWITCHES, True))
    return compare_family(
        {names[r]: values[r] - values[every_on] for r in range(len(names)) if r != every_on}, 0.05, margin,
        test="wilcoxon", equivalence_test="wilcoxon",
    )  # fmt: skip


def test_the_smallest_sufficient_set_is_confirmed_only_when_its_cell_passes_the_equivalence_test():
    design, values = sufficiency_values(seeds=12, sd=0.1)
    chosen = smallest_sufficient_set(design, values, margin=5.0)
    assert chosen.keep == (SWITCHES[0], SWITCHES[2]) and chosen.observed_within_margin
    assert chosen.confirmed is False  # not tested yet
    cell = per_cell_family(design, values)[canonical_name(chosen.switches)]
    assert cell.p_equivalence_adjusted <= 0.05  # 12 seeds all within 5 of a loss of 1: shown at the family's level
    confirmed = confirm_sufficient(chosen, cell)
    assert confirmed.confirmed is True and confirmed.confirmation is cell and confirmed.confirmation_reason == ""
    # the same cell with a failed run in an arm: the return's test cannot see it
    failed = confirm_sufficient(chosen, cell, failed=(1, 0))
    assert failed.confirmed is False and failed.confirmation_reason.startswith("failures in an arm")
    assert confirm_sufficient(chosen, None).confirmed is False


def test_a_sufficient_set_within_the_margin_by_its_point_estimate_alone_is_not_confirmed():
    # 5 seeds: the exact test's smallest one-sided p, 1/32, is above the family's first level 0.05 / 15
    design, values = sufficiency_values(seeds=5, sd=0.1)
    chosen = smallest_sufficient_set(design, values, margin=5.0)
    assert chosen.keep == (SWITCHES[0], SWITCHES[2]) and chosen.observed_within_margin is True
    cell = per_cell_family(design, values)[canonical_name(chosen.switches)]
    result = confirm_sufficient(chosen, cell)
    assert result.confirmed is False and cell.p_equivalence_adjusted > 0.05
    assert result.confirmation_reason.startswith("equivalence not shown at the family's level: p not equivalent")
    assert result.confirmation.ci is not None  # the report gives the interval


def test_a_factorial_report_confirms_its_sufficient_set_through_the_per_cell_comparisons():
    # clipped double Q adds nothing anywhere: keeping target networks alone is sufficient, its cell equal to TD3's
    data = study(
        ["target_networks", "clipped_double_q"],
        lambda s, seed: -150.0 - 100.0 * (not s["target_networks"]) - 3 * seed + jitter(s, seed, scale=1.0),
        seeds=12,
    )
    design, variant_of = study_design(data, ENV)
    keys = ["".join("+" if cell[f] else "-" for f in design.factors) for cell in design.cells]
    finals = np.array([[run.values["mean_return"][-1] for run in data.runs[ENV][variant_of[k]]] for k in keys])
    cells = per_cell_family(design, finals, margin=50.0)
    result = analyse_outcome(data, ENV, design, variant_of, "final_window", PLAN, 50.0, cells, {})
    sufficient = result.sufficient
    assert sufficient.keep == ("target_networks",) and sufficient.confirmed is True
    assert sufficient.confirmation is cells[variant_of["+-"]]
    # with no per-cell comparison (the baseline is not the all-on cell) it stays unconfirmed
    alone = analyse_outcome(data, ENV, design, variant_of, "final_window", PLAN, 50.0)
    assert alone.sufficient.confirmed is False


# -- per-cell tables that cannot reach a verdict ----------------------------------------------------------------------


def thirty_one_cells(n):
    rng = np.random.default_rng(0)
    return {f"cell{i}": rng.normal(0, 10, n) for i in range(31)}


def test_per_cell_tables_know_which_verdicts_their_seeds_can_reach():
    # Holm over 62 hypotheses (two tests): first level 0.05 / 62 = 0.00081; Wilcoxon's smallest p at n = 10 is
    # 2 / 2^10 = 0.002, the sign-flip TOST's one-sided 1 / 2^10 = 0.00098: nothing can be decided
    family = compare_family(thirty_one_cells(10), 0.05, 50.0, test="wilcoxon", equivalence_test="signflip")
    holm = attainable_verdicts(family, "wilcoxon", "signflip")
    assert holm.level == pytest.approx(0.05 / 62) and holm.smallest_p_differs == smallest_p("wilcoxon", 10)
    assert holm.smallest_p_equivalent == smallest_p("signflip", 10) / 2
    assert (holm.differs, holm.equivalent, holm.label) == (False, False, "cannot decide at n = 10")
    assert all(c.verdict == UNRESOLVED for c in family.values())
    # one test for both claims (Shaffer): 0.05 / 31 = 0.0016 is below 0.002 but above 0.00098
    family = compare_family(thirty_one_cells(10), 0.05, 50.0, test="wilcoxon", equivalence_test="wilcoxon")
    shaffer = attainable_verdicts(family, "wilcoxon", "wilcoxon")
    assert (shaffer.differs, shaffer.equivalent, shaffer.label) == (False, True, "cannot reach differs at n = 10")
    # two more seeds: 2 / 2^12 = 0.00049 <= 0.00081, the table can decide
    more = attainable_verdicts(compare_family(thirty_one_cells(12), 0.05, 50.0, equivalence_test="signflip"), "wilcoxon",
                               "signflip")  # fmt: skip
    assert more.differs and more.equivalent and more.label == ""
    # the t-test has no floor
    assert attainable_verdicts(compare_family(thirty_one_cells(3), 0.05, 50.0, test="t"), "t", "t").label == ""


def test_a_per_cell_table_that_cannot_decide_says_so_above_it():
    family = compare_family(thirty_one_cells(10), 0.05, 50.0, test="wilcoxon", equivalence_test="signflip")
    margin = Margin(50.0, "declared", 1.0, None)
    result = OutcomeResult(None, True, {}, family, margin, per_cell=attainable_verdicts(family, "wilcoxon", "signflip"))
    heading = per_cell_heading(result)
    assert heading[0].startswith("**Cannot decide at n = 10** with these tests: no verdict but unresolved is possible")
    assert "0.002 for a difference, 0.00098 for an equivalence; the family's first step asks p <= 0.00081" in heading[0]
    decidable = compare_family(thirty_one_cells(12), 0.05, 50.0, equivalence_test="signflip")
    result.per_cell = attainable_verdicts(decidable, "wilcoxon", "signflip")
    assert per_cell_heading(result) == []
