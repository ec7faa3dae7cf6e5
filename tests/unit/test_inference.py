"""The verdicts of a family of paired comparisons on synthetic differences with known truth: Holm on a textbook
example, the minimum detectable effect against its known value, the family-wise error rate of nulls in a seeded
simulation, and each of the three verdicts."""

import math

import numpy as np
import pytest
from scipy import stats

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


def test_family_of_nulls_keeps_the_family_wise_rate():
    """Six true nulls per family, 5 seeds: a family with any `differs` happens at most at rate alpha (Holm)."""
    rng = np.random.default_rng(0)
    families, alpha = 1000, 0.05
    any_differs = 0
    for _ in range(families):
        family = {f"v{i}": rng.normal(0.0, 1.0, size=5) for i in range(6)}
        verdicts = [c.verdict for c in compare_family(family, alpha=alpha, margin=0.1).values()]
        any_differs += DIFFERS in verdicts
    rate = any_differs / families
    # Holm keeps the rate below alpha (about alpha for independent nulls); binomial sd at 1000 families is 0.007
    assert rate <= alpha + 2 * math.sqrt(alpha * (1 - alpha) / families)
    # without a correction the same nulls would pass far more often: 1 - 0.95^6 = 26%
    assert rate < 0.1


def test_real_difference_differs():
    rng = np.random.default_rng(1)
    family = {"real": 10.0 + rng.normal(0.0, 1.0, size=5), **{f"null{i}": rng.normal(0.0, 1.0, size=5) for i in range(5)}}
    result = compare_family(family, alpha=0.05, margin=0.5)
    real = result["real"]
    assert real.verdict == DIFFERS and "paired t-test" in real.test and "Holm" in real.test
    assert real.p_adjusted <= 0.05 and real.p_adjusted >= real.p_raw
    assert real.ci[0] > 0 and real.family_size == 6 and real.n == 5
    assert real.effect == pytest.approx(float(np.mean(family["real"])), abs=1e-12)
    assert real.p_raw == pytest.approx(stats.ttest_1samp(family["real"], 0.0).pvalue, abs=1e-15)


def test_tiny_difference_with_tight_seeds_is_equivalent():
    rng = np.random.default_rng(2)
    family = {"tiny": 0.01 + rng.normal(0.0, 0.05, size=10), "other": rng.normal(0.0, 0.05, size=10)}
    result = compare_family(family, alpha=0.05, margin=1.0)
    assert result["tiny"].verdict == EQUIVALENT and "TOST" in result["tiny"].test
    assert result["tiny"].p_equivalence_adjusted <= 0.05 and result["tiny"].within_margin
    # the same differences with a margin below them are not shown equivalent
    assert compare_family(family, alpha=0.05, margin=0.001)["tiny"].verdict != EQUIVALENT


def test_noisy_null_is_unresolved_with_its_minimum_detectable_effect():
    rng = np.random.default_rng(3)
    family = {f"v{i}": rng.normal(0.0, 100.0, size=5) for i in range(6)}
    result = compare_family(family, alpha=0.05, margin=1.0)
    for comparison in result.values():
        assert comparison.verdict == UNRESOLVED
        sd = float(np.std(family[comparison.name], ddof=1))
        # the MDE at 80% power for this n at the level Holm asks of the first comparison (alpha / 6)
        assert comparison.mde == pytest.approx(minimum_detectable_effect(sd, 5, 0.05 / 6), rel=1e-12)
        assert comparison.mde > 2.5 * sd
        needed = comparison.seeds_needed
        assert needed is None or needed > 5
        assert needed == seeds_needed(comparison.effect, sd, 0.05 / 6)


def test_too_few_pairs_get_no_test():
    result = compare_family({"two": np.array([1.0, 2.0]), "five": np.arange(5.0) + 10}, alpha=0.05, margin=1.0, min_n=5)
    assert result["two"].verdict == UNRESOLVED and result["two"].reason.startswith("n = 2 < 5")
    assert math.isnan(result["two"].p_raw) and result["two"].ci is None
    # the untested comparison is not part of the family: the other one is tested alone
    assert result["five"].family_size == 1 and result["five"].p_adjusted == result["five"].p_raw
    assert result["five"].verdict == DIFFERS


def test_identical_differences_have_exact_limits():
    result = compare_family({"same": np.zeros(5), "shifted": np.full(5, 3.0)}, alpha=0.05, margin=1.0)
    assert result["same"].verdict == EQUIVALENT and result["same"].p_raw == 1.0
    assert result["shifted"].verdict == DIFFERS and result["shifted"].p_raw == 0.0
