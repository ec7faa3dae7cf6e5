"""The verdicts of a family of paired comparisons on synthetic differences with known truth: Holm on a textbook
example, the minimum detectable effect against its known value, the family-wise error rate of nulls (normal and
heavy-tailed) in a seeded simulation, each of the three verdicts, and the robust tests, failure counts, sequential
boundaries and random-effects combination against published or exact values."""

import math

import numpy as np
import pytest
from scipy import stats

from sb3_ablation.study.analyse.failures import failure_rate, paired_failure_test, worst_mean
from sb3_ablation.study.analyse.inference import (
    DIFFERS,
    EQUIVALENT,
    UNRESOLVED,
    compare_family,
    holm,
    minimum_detectable_effect,
    paired_t_power,
    seeds_needed,
)
from sb3_ablation.study.analyse.paired_methods import PAIRED_TESTS, hodges_lehmann
from sb3_ablation.study.analyse.paired_tests import ESTIMATE_NAMES, TEST_NAMES, TESTS, compare_paired, location
from sb3_ablation.study.plan import analysis_plan
from sb3_ablation.study.render.learning import estimate_name


def test_every_paired_test_is_one_row_of_the_registry_that_plan_analysis_and_render_read():
    assert analysis_plan.TESTS == TESTS == tuple(PAIRED_TESTS)
    d = np.array([-30.0, 1.0, 2.0, 3.0, 4.0, 50.0])
    for name, test in PAIRED_TESTS.items():
        assert (TEST_NAMES[name], ESTIMATE_NAMES[name], estimate_name(name)) == (test.description, *[test.estimate_name] * 2)
        assert location(d, name) == test.location(d)
    assert [location(d, name) for name in ("t", "wilcoxon", "signflip_trimmed")] == [5.0, hodges_lehmann(d), 2.5]
    with pytest.raises(KeyError):  # an unregistered test has no estimate name (not "mean" by default)
        estimate_name("median_test")


def test_holm_textbook_example():
    # sorted p: 0.005, 0.01, 0.03, 0.04 (m = 4) -> 4 * 0.005, 3 * 0.01, 2 * 0.03, max(1 * 0.04, 0.06): monotone
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02], rtol=0, atol=1e-15)
    # capped at 1, and an untested comparison (NaN) is not counted in m
    np.testing.assert_allclose(holm([0.6, math.nan, 0.5]), [1.0, math.nan, 1.0])
    np.testing.assert_allclose(holm([0.02, math.nan]), [0.02, math.nan])


def test_minimum_detectable_effect_known_value():
    # n = 5 pairs, alpha 0.05, power 0.8: the textbook t-approximation (t_0.975,4 + t_0.8,4) / sqrt(5) = 1.662 sd;
    # the exact noncentral-t value this module uses is 1.682 sd
    approximation = (stats.t.ppf(0.975, 4) + stats.t.ppf(0.8, 4)) / math.sqrt(5)
    assert approximation == pytest.approx(1.662, abs=5e-4)
    mde = minimum_detectable_effect(sd=1.0, n=5, alpha=0.05)
    assert mde == pytest.approx(1.682, abs=5e-4)
    assert minimum_detectable_effect(sd=300.0, n=5, alpha=0.05) == pytest.approx(300.0 * mde, rel=1e-9)
    # at that effect the test has exactly the requested power, and the approximation is a little short of it
    assert paired_t_power(mde, 1.0, 5, 0.05) == pytest.approx(0.8, abs=1e-8)
    assert paired_t_power(approximation, 1.0, 5, 0.05) < 0.8
    # a family of 6 asks for alpha / 6 from the comparison Holm tests first: a larger MDE
    assert minimum_detectable_effect(1.0, 5, 0.05 / 6) > 2.5
    assert math.isnan(minimum_detectable_effect(1.0, 1, 0.05))


def test_seeds_needed_matches_the_minimum_detectable_effect():
    mde5 = minimum_detectable_effect(1.0, 5, 0.05)
    assert seeds_needed(mde5 + 1e-6, 1.0, 0.05) == 5
    assert seeds_needed(mde5 - 1e-3, 1.0, 0.05) == 6
    assert seeds_needed(1.0, 1.0, 0.05) == 10  # the classic answer for a one-sd paired effect
    assert seeds_needed(0.001, 1.0, 0.05) is None  # beyond 1000 seeds
    assert seeds_needed(0.0, 1.0, 0.05) is None


@pytest.mark.parametrize("noise", ["normal", "t3"])
def test_family_of_nulls_keeps_one_family_wise_rate_for_both_kinds_of_claims(noise):
    """Six true nulls per family, 10 seeds: a family with any false `differs` happens at most at rate alpha."""
    rng = np.random.default_rng(0)
    families, alpha = 400, 0.05
    any_differs = 0
    for _ in range(families):
        draw = rng.normal if noise == "normal" else lambda loc, scale, size: rng.standard_t(3, size=size)
        family = {f"v{i}": draw(0.0, 1.0, size=10) for i in range(6)}
        verdicts = [c.verdict for c in compare_family(family, alpha=alpha, margin=0.1).values()]
        any_differs += DIFFERS in verdicts
    rate = any_differs / families
    assert rate <= alpha + 2 * math.sqrt(alpha * (1 - alpha) / families)


def test_a_consistent_shift_with_two_collapsed_seeds_differs_where_the_t_test_cannot():
    d = np.array([-599.8, -368.5, -58.7, -27.1, -26.2, -23.5, -19.9, -13.6, -4.9, -0.9])
    assert stats.ttest_1samp(d, 0.0).pvalue == pytest.approx(0.109, abs=0.001)
    for test in ("wilcoxon", "signflip"):
        assert compare_paired(d, test, 0.05).p_differs == pytest.approx(2 / 1024)
    result = compare_family({"no_target_networks": d, "other": np.linspace(-1, 1, 10)}, alpha=0.05, margin=50)
    assert result["no_target_networks"].verdict == DIFFERS and "Wilcoxon" in result["no_target_networks"].test
    assert result["no_target_networks"].effect == pytest.approx(hodges_lehmann(d))


def test_wilcoxon_matches_scipy_and_its_interval_is_the_walsh_order_statistics():
    d = np.array([1.5, -0.5, 2.0, 3.5, 0.8, -1.2, 2.7, 4.1])
    result = compare_paired(d, "wilcoxon", 0.05)
    assert result.p_differs == pytest.approx(stats.wilcoxon(d).pvalue, abs=1e-15)
    walsh = np.sort([(d[i] + d[j]) / 2 for i in range(8) for j in range(i, 8)])
    # n = 8: P(T+ <= 3) = 5/256 <= 0.025 < P(T+ <= 4) = 7/256, so the interval is the 4th smallest to 4th largest
    assert (result.ci_low, result.ci_high) == (walsh[3], walsh[-4])
    assert result.estimate == np.median(walsh)


def test_a_variant_failing_in_a_fifth_of_its_seeds_is_not_equivalent_by_any_test():
    d = np.array([0.2, -0.1, 0.3, -1000.0, 0.1, 0.0, -0.2, -1000.0, 0.1, 0.2])
    for test in TESTS:
        assert compare_paired(d, test, 0.05, margin=50.0).p_equivalent > 0.05, test


def test_failure_counts_are_exact():
    k, n, rate, low, high = failure_rate(np.array([True, False, False, True, False]))
    ci = stats.binomtest(2, 5).proportion_ci(0.95, method="exact")
    assert (k, n, rate) == (2, 5, 0.4) and (low, high) == (ci.low, ci.high)
    # McNemar: only the discordant seeds count; 6 fail only with the variant, none only with the baseline
    variant = np.array([True] * 6 + [False] * 4)
    baseline = np.array([False] * 10)
    assert paired_failure_test(variant, baseline) == pytest.approx(2 / 64)
    assert paired_failure_test(baseline, baseline) == 1.0
    assert worst_mean(np.array([5.0, -10.0, 3.0, -20.0, 1.0, 2.0, 4.0, 0.0])) == -15.0  # the worst 2 of 8


def test_real_difference_differs():
    rng = np.random.default_rng(1)
    family = {"real": 10.0 + rng.normal(0.0, 1.0, size=10), **{f"null{i}": rng.normal(0.0, 1.0, size=10) for i in range(5)}}
    result = compare_family(family, alpha=0.05, margin=0.5)
    real = result["real"]
    assert real.verdict == DIFFERS and "Wilcoxon" in real.test and "Holm" in real.test  # two tests: Holm over 2m
    assert real.p_adjusted <= 0.05 and real.p_adjusted >= real.p_raw
    assert real.ci[0] > 0 and real.family_size == 6 and real.n == 10
    assert real.effect == pytest.approx(hodges_lehmann(family["real"]), abs=1e-12)
    assert real.p_raw == pytest.approx(stats.wilcoxon(family["real"]).pvalue, abs=1e-15)


def test_tiny_difference_with_tight_seeds_is_equivalent():
    rng = np.random.default_rng(2)
    family = {"tiny": 0.01 + rng.normal(0.0, 0.05, size=10), "other": rng.normal(0.0, 0.05, size=10)}
    result = compare_family(family, alpha=0.05, margin=1.0)
    assert result["tiny"].verdict == EQUIVALENT and result["tiny"].p_equivalence_adjusted <= 0.05
    # the same differences with a margin below them are not shown equivalent
    assert compare_family(family, alpha=0.05, margin=0.001)["tiny"].verdict != EQUIVALENT


def test_noisy_null_is_unresolved_with_its_minimum_detectable_effect():
    rng = np.random.default_rng(3)
    family = {f"v{i}": rng.normal(0.0, 100.0, size=10) for i in range(6)}
    result = compare_family(family, alpha=0.05, margin=1.0)
    for comparison in result.values():
        assert comparison.verdict == UNRESOLVED
        sd = float(np.std(family[comparison.name], ddof=1))
        # the MDE at 80% power for this n at the level of Holm's first step over the 12 hypotheses (alpha / 12), a
        # paired-t approximation
        assert comparison.mde == pytest.approx(minimum_detectable_effect(sd, 10, 0.05 / 12), rel=1e-12)
        assert comparison.seeds_needed == seeds_needed(comparison.effect, sd, 0.05 / 12)


def test_too_few_pairs_get_no_test_and_five_pairs_cannot_reject_with_an_exact_test():
    result = compare_family({"two": np.array([1.0, 2.0]), "five": np.arange(5.0) + 10}, alpha=0.05, margin=1.0, min_n=5)
    assert result["two"].verdict == UNRESOLVED and result["two"].reason.startswith("n = 2 < 5")
    assert math.isnan(result["two"].p_raw) and result["two"].ci is None
    # the untested comparison is not part of the family; five pairs of one sign give p = 2/32 > alpha
    assert result["five"].family_size == 1 and result["five"].p_raw == pytest.approx(1 / 16)
    assert result["five"].verdict == UNRESOLVED and "cannot reach" in result["five"].reason
    assert compare_family({"five": np.arange(5.0) + 10}, alpha=0.05, margin=1.0, test="t")["five"].verdict == DIFFERS


def test_identical_differences_have_exact_limits():
    result = compare_family({"same": np.zeros(10), "shifted": np.full(10, 3.0)}, alpha=0.05, margin=1.0)
    assert result["same"].verdict == EQUIVALENT and result["same"].p_raw == 1.0
    assert result["shifted"].verdict == DIFFERS and result["shifted"].p_raw == pytest.approx(2 / 1024)
