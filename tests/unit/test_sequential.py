"""Group-sequential looks: Lan-DeMets boundaries, their error under the null by simulation, where a design stops,
and the sequential family decision a study's looks use."""

import math

import numpy as np
import pytest
from scipy import stats

from sb3_ablation.study.analyse.sequential import nominal_alpha, sequential_boundaries, sequential_decision, spent_alpha


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
