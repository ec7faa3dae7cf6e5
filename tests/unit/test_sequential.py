"""Group-sequential looks: Lan-DeMets boundaries, their error under the null by simulation, where a design stops,
and the sequential family decision a study's looks use."""

import math

import numpy as np
import pytest
from scipy import stats

from sb3_ablation.study.analyse.family_verdicts import DIFFERS, EQUIVALENT, UNRESOLVED
from sb3_ablation.study.analyse.paired_tests import paired_p_values, tost_p_value
from sb3_ablation.study.analyse.sequential import (
    OPEN,
    nominal_alpha,
    sequential_boundaries,
    sequential_decision,
    sequential_family,
    spent_alpha,
)


def _mc_limit(rate: float, draws: int, z: float = 2.0) -> float:
    """The largest simulated rate still consistent with a true rate of ``rate`` (z Monte Carlo standard errors)."""
    return rate + z * math.sqrt(rate * (1 - rate) / draws)


def test_lan_demets_boundaries_of_two_equal_looks():
    obf = sequential_boundaries([5, 10], 0.05, "obrien-fleming")
    pocock = sequential_boundaries([5, 10], 0.05, "pocock")
    # the first look spends 2 - 2 Phi(1.96 / sqrt(0.5)): its boundary is 1.96 sqrt(2) exactly
    assert obf[0] == pytest.approx(stats.norm.isf(0.025) * math.sqrt(2), abs=1e-9)
    assert obf == pytest.approx((2.7718, 1.9793), abs=2e-4)
    assert pocock == pytest.approx((2.1570, 2.2010), abs=2e-4)
    # these are the Lan-DeMets spending boundaries, not the classic constant-shape ones: O'Brien-Fleming's classic
    # (2.797, 1.977) and Pocock's classic 2.178 at both looks (checked by simulation below)
    assert obf[0] < 2.79 and pocock[0] < 2.17 < 2.19 < pocock[1]
    assert nominal_alpha(obf) == pytest.approx((2 * stats.norm.sf(obf[0]), 2 * stats.norm.sf(obf[1])))


def test_boundaries_agree_with_scipys_multivariate_normal():
    looks = [4, 8, 13, 20]
    for kind in ("obrien-fleming", "pocock"):
        c = np.array(sequential_boundaries(looks, 0.05, kind))
        n = np.array(looks, dtype=float)
        covariance = np.sqrt(np.minimum.outer(n, n) / np.maximum.outer(n, n))
        inside = stats.multivariate_normal(np.zeros(4), covariance).cdf(c, lower_limit=-c, rng=np.random.default_rng(0))
        assert 1 - inside == pytest.approx(0.05, abs=2e-4)


def test_sequential_designs_by_simulation():
    rng = np.random.default_rng(9)
    draws = 400_000
    z1 = rng.standard_normal(draws)
    z2 = (z1 + rng.standard_normal(draws)) / math.sqrt(2)  # looks at 5 and 10 of 10 seeds: correlation sqrt(1/2)
    se = math.sqrt(0.05 * 0.95 / draws)
    for kind in ("obrien-fleming", "pocock"):
        c1, c2 = sequential_boundaries([5, 10], 0.05, kind)
        first = np.abs(z1) >= c1
        assert np.mean(first) == pytest.approx(spent_alpha(kind, 0.5, 0.05), abs=4 * se)
        assert np.mean(first | (np.abs(z2) >= c2)) == pytest.approx(0.05, abs=4 * se)
    # the classic Pocock constant (one boundary for both looks), found independently from the simulated maxima
    classic = np.quantile(np.maximum(np.abs(z1), np.abs(z2)), 0.95)
    assert classic == pytest.approx(2.178, abs=0.01)
    # three looks at 5, 10 and 20 seeds of a paired z statistic: the design's error is at most alpha
    d = rng.normal(size=(50_000, 20))
    z = np.stack([d[:, :n].sum(axis=1) / math.sqrt(n) for n in (5, 10, 20)], axis=1)
    rejected = np.any(np.abs(z) >= np.array(sequential_boundaries([5, 10, 20], 0.05)), axis=1).mean()
    assert rejected <= _mc_limit(0.05, 50_000)


def test_sequential_decision_stops_at_the_first_crossing():
    boundaries = sequential_boundaries([5, 10, 20], 0.05)
    assert sequential_decision([0.5, 0.001, 1e-9], boundaries) == 1
    assert sequential_decision([1e-5, 0.5, 0.5], boundaries) == 0  # |z| = 4.42 > 3.92
    assert sequential_decision([0.5, 0.5], boundaries) is None
    assert sequential_decision([math.nan, 0.5, 0.04], boundaries) == 2  # 0.04 < nominal 0.0478 at the last look
    with pytest.raises(ValueError, match="increasing"):
        sequential_boundaries([10, 5], 0.05)


# ----------------------------------------------------------------------------------------------------------------------
# A family at the same looks (Maurer-Bretz, Holm-type)
# ----------------------------------------------------------------------------------------------------------------------

LOOKS = (5, 10, 20)


def _look_p_values(d: np.ndarray, looks=LOOKS, test: str = "wilcoxon") -> np.ndarray:
    """The paired test's p-value at each look, for rows of per-seed differences (rows x seeds) -> rows x looks."""
    return np.stack([paired_p_values(d[:, :n], test) for n in looks], axis=1)


def _arms(rng: np.random.Generator, shape: tuple[int, ...], failure: float) -> np.ndarray:
    """One arm's returns: t3 noise, and a collapse (-50 SDs) in a ``failure`` share of the seeds."""
    return rng.standard_t(3, size=shape) - 50.0 * (rng.random(shape) < failure)


def _family_errors(d: np.ndarray, margin: float, looks=LOOKS) -> tuple[int, int]:
    """How many simulated families (families x comparisons x seeds) make a false differs / any equivalent claim."""
    families, m, n = d.shape
    p = _look_p_values(d.reshape(families * m, n), looks).reshape(families, m, len(looks))
    tost = tost_p_value(d.reshape(families * m, n)[:, : looks[-1]], "wilcoxon", margin).reshape(families, m)
    differs = equivalent = 0
    for r in range(families):
        names = [f"v{i}" for i in range(m)]
        decisions = sequential_family(
            {name: p[r, i] for i, name in enumerate(names)}, {name: tost[r, i] for i, name in enumerate(names)}, looks, 0.05
        )
        verdicts = {decision.verdict for decision in decisions.values()}
        differs += DIFFERS in verdicts
        equivalent += EQUIVALENT in verdicts
    return differs, equivalent


def test_the_familys_error_under_the_null_is_at_most_alpha_with_heavy_tails_and_failures():
    rng = np.random.default_rng(3)
    families = 1500
    for failure in (0.0, 0.2):
        d = _arms(rng, (families, 4, 20), failure) - _arms(rng, (families, 4, 20), failure)
        false_differs, _ = _family_errors(d, margin=0.5)
        assert false_differs / families <= _mc_limit(0.05, families)


def test_equivalence_is_not_claimed_falsely_at_the_margin():
    # every comparison's true pseudo-median sits on the margin: any equivalent is a false claim
    rng = np.random.default_rng(4)
    families = 1500
    d = rng.normal(size=(families, 4, 20)) + 1.0
    _, false_equivalent = _family_errors(d, margin=1.0)
    assert false_equivalent / families <= _mc_limit(0.05, families)


def test_testing_every_look_at_the_one_look_level_is_what_the_boundaries_prevent():
    # the same null samples at four looks: testing each at alpha errs far more often than alpha, the design does not
    rng = np.random.default_rng(5)
    draws, looks = 4000, (5, 10, 15, 20)
    p = _look_p_values(rng.normal(size=(draws, 20)), looks, test="t")
    naive = (p.min(axis=1) <= 0.05).mean()
    designed = np.mean([sequential_family({"v": row}, {}, looks, 0.05)["v"].verdict == DIFFERS for row in p])
    assert naive > 0.09 and designed <= _mc_limit(0.05, draws)


def test_a_consistent_shift_with_two_collapses_stops_for_differs():
    shifted = np.array([-599.8, -368.5, -58.7, -27.1, -26.2, -23.5, -19.9, -13.6, -4.9, -0.9] * 2)
    p = _look_p_values(shifted[None, :])[0]
    decisions = sequential_family({"no_target_networks": p}, {}, LOOKS, 0.05, equivalence_claims=False)
    decision = decisions["no_target_networks"]
    # Wilcoxon at 5 seeds cannot go below p = 1/16 (two-sided): the first look cannot stop; the second does
    assert p[0] == pytest.approx(1 / 16) and decision.boundaries[0] > stats.norm.isf(1 / 32)
    assert decision.verdict == DIFFERS and decision.look == 1 and decision.level == 0.05


def test_a_rejection_frees_its_share_of_alpha_for_the_others():
    looks = (10, 20)
    alone = sequential_boundaries(looks, 0.05)
    half = sequential_boundaries(looks, 0.025)
    # "b" crosses at the last look at level alpha but not at alpha / 2; "a" crosses at the first look at alpha / 2
    p_b = 2 * stats.norm.sf((alone[1] + half[1]) / 2)
    p_a = 2 * stats.norm.sf(half[0] + 0.1)
    decisions = sequential_family({"a": [p_a], "b": [0.5, p_b]}, {}, looks, 0.05, equivalence_claims=False)
    assert decisions["a"].verdict == DIFFERS and decisions["a"].look == 0
    assert decisions["b"].verdict == DIFFERS and decisions["b"].look == 1 and decisions["b"].level == 0.05
    # without "a"'s rejection "b" stays unresolved
    decisions = sequential_family({"a": [0.9, 0.9], "b": [0.5, p_b]}, {}, looks, 0.05, equivalence_claims=False)
    assert decisions["b"].verdict == UNRESOLVED and decisions["b"].level == 0.025


def test_open_until_the_last_look_then_unresolved_or_equivalent():
    decisions = sequential_family({"a": [0.5], "b": [0.4, 0.3, 0.2]}, {"b": 1e-4}, LOOKS, 0.05)
    assert decisions["a"].verdict == OPEN and decisions["a"].looks_reached == 1 and decisions["a"].look is None
    assert decisions["b"].verdict == EQUIVALENT and decisions["b"].look == 2
    # Shaffer's divisor: two comparisons, each with a hypothesis left
    assert decisions["b"].level == 0.025
    decisions = sequential_family({"b": [0.4, 0.3, 0.2]}, {"b": 0.2}, LOOKS, 0.05)
    assert decisions["b"].verdict == UNRESOLVED and decisions["b"].p_equivalence == 0.2
