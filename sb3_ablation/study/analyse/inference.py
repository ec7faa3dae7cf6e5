"""Paired comparisons with family-wise error control: the verdicts of an ablation study.

One *family* is a set of paired comparisons that are read together (by default: every variant against the baseline
on one env and one outcome). Each comparison is an array of per-seed differences (variant - baseline; the two runs of
a seed share initial weights and evaluation episodes), and gets one of three verdicts:

- ``differs``: the paired t-test (two-sided, ``scipy.stats.ttest_1samp`` of the differences against 0) rejects after
  Holm's step-down correction over the family (:func:`holm`);
- ``equivalent``: the two one-sided tests (TOST) of H0: mean <= -margin and H0: mean >= +margin both reject, also
  after Holm's correction over the family, i.e. the difference is shown to lie within ``±margin``;
- ``unresolved``: neither; then the minimum detectable effect (:func:`minimum_detectable_effect`) says how large a
  difference this many seeds could have detected, and :func:`seeds_needed` how many seeds would detect the observed one.

A difference can be both real and within the margin: its verdict is then ``differs`` (``Comparison.within_margin``
says so). Power is computed exactly from the noncentral t distribution (``scipy.stats.nct``), at the level
``alpha / m`` (Bonferroni, Holm's strictest step) for a family of ``m`` comparisons, so that a number of seeds given
as "needed" suffices whatever the other comparisons of the family show.

This module needs only numpy and scipy, so other analyses (factorial contrasts) can use :func:`compare_family` on any
per-seed contrast vectors.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

DIFFERS, EQUIVALENT, UNRESOLVED = "differs", "equivalent", "unresolved"
VERDICTS = (DIFFERS, EQUIVALENT, UNRESOLVED)
PAIRED_T = "paired t-test, two-sided, Holm-corrected over the family"
TOST = "two one-sided paired t-tests (TOST), Holm-corrected over the family"


def holm(p_values: Sequence[float]) -> np.ndarray:
    """
    Holm-Bonferroni adjusted p-values: with the m p-values sorted ascending, ``adj_(i) = max_{j <= i} min(1,
    (m - j + 1) p_(j))``. Rejecting where ``adj <= alpha`` controls the family-wise error rate at alpha. NaN entries
    (no test) are not part of the family and stay NaN.

    :param p_values: raw p-values of one family
    :return: adjusted p-values, in the order given
    """
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    m = len(tested)
    order = tested[np.argsort(p[tested], kind="stable")]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def paired_t_power(effect: float | np.ndarray, sd: float, n: int | np.ndarray, alpha: float) -> np.ndarray:
    """
    Exact power of the two-sided paired t-test (n pairs) at level alpha against a true mean difference ``effect``:
    ``P(|T| > t_{1-alpha/2, n-1})`` with T noncentral t, ``n - 1`` degrees of freedom, noncentrality
    ``effect sqrt(n) / sd``.
    """
    n = np.asarray(n, dtype=np.float64)
    df = n - 1
    critical = stats.t.ppf(1 - alpha / 2, df)
    noncentrality = np.abs(effect) * np.sqrt(n) / sd
    # the far tail is negligible where scipy's nct returns NaN for it (noncentrality in the tens)
    far_tail = np.nan_to_num(stats.nct.cdf(-critical, df, noncentrality), nan=0.0)
    return stats.nct.sf(critical, df, noncentrality) + far_tail


def minimum_detectable_effect(sd: float, n: int, alpha: float, power: float = 0.8) -> float:
    """
    The smallest true mean difference that a two-sided paired t-test on ``n`` pairs detects at level ``alpha`` with
    probability ``power``, computed exactly with the noncentral t distribution (the usual approximation
    ``(t_{1-alpha/2} + t_{power}) sd / sqrt(n)`` is a little smaller: 1.662 sd instead of 1.682 sd for n = 5,
    alpha = 0.05, power 0.8).

    :param sd: standard deviation of the per-seed differences
    :param n: number of pairs (seeds)
    :param alpha: the test's level (for a family, the level a comparison must pass)
    :param power: the probability of detecting it
    :return: the effect, in the units of ``sd``; NaN with fewer than 2 pairs or an undefined sd; 0 when sd is 0
    """
    if n < 2 or not math.isfinite(sd):
        return math.nan
    n = int(n)
    table = _mde_table(float(alpha), float(power), MAX_SEEDS)
    return float(sd * (table[n - 2] if n <= MAX_SEEDS else _mde_in_sd(np.array([n]), alpha, power)[0]))


MAX_SEEDS = 1000


def _mde_in_sd(n: np.ndarray, alpha: float, power: float) -> np.ndarray:
    """
    The minimum detectable effect in units of the sd of the differences, for each n at once: bisection on the exact
    power, which grows with the effect, bracketed from the usual approximation upwards.
    """
    n = np.asarray(n, dtype=np.float64)
    high = (stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1)) / np.sqrt(n)
    while np.any(short := paired_t_power(high, 1.0, n, alpha) < power):
        high = np.where(short, 2 * high, high)
    low = np.zeros_like(high)
    for _ in range(60):  # 2^-60 of the bracket: exact to double precision
        middle = (low + high) / 2
        enough = paired_t_power(middle, 1.0, n, alpha) >= power
        low, high = np.where(enough, low, middle), np.where(enough, middle, high)
    return high


@functools.lru_cache(maxsize=64)
def _mde_table(alpha: float, power: float, max_n: int) -> np.ndarray:
    """The minimum detectable effect in units of sd for n = 2 .. max_n (it depends on n, alpha and power only)."""
    return _mde_in_sd(np.arange(2, max_n + 1), alpha, power)


def seeds_needed(effect: float, sd: float, alpha: float, power: float = 0.8, max_n: int = MAX_SEEDS) -> int | None:
    """
    The fewest pairs (seeds) with which a two-sided paired t-test at level ``alpha`` detects a true mean difference
    ``effect`` with probability ``power`` (exact, noncentral t): the smallest n whose minimum detectable effect is at
    most ``|effect|``.

    :param effect: the difference to detect (e.g. the observed mean difference)
    :param sd: standard deviation of the per-seed differences
    :param max_n: the largest number considered
    :return: the number of seeds, or ``None`` when more than ``max_n`` would be needed (or effect is 0 / undefined)
    """
    if not (math.isfinite(effect) and math.isfinite(sd)) or effect == 0:
        return None
    if sd == 0:
        return 2
    table = _mde_table(float(alpha), float(power), int(max_n))
    enough = np.flatnonzero(table <= abs(effect) / sd)  # the MDE falls with n
    return int(enough[0]) + 2 if len(enough) else None


@dataclass(frozen=True)
class Comparison:
    """
    One paired comparison of a family (see the module docstring).

    :param name: what is compared (a variant, a contrast)
    :param n: number of pairs (seeds)
    :param effect: mean of the per-seed differences
    :param ci: (1 - alpha) Student-t interval of the mean difference (95% at alpha = 0.05), not corrected for the
        family; ``None`` with fewer than ``min_n`` pairs
    :param sd: standard deviation of the per-seed differences (NaN with fewer than 2)
    :param p_raw: p-value of the paired t-test (NaN without a test)
    :param p_adjusted: Holm-adjusted p over the family
    :param p_equivalence: TOST p-value (the larger of the two one-sided p-values) for ``±margin``
    :param p_equivalence_adjusted: Holm-adjusted TOST p over the family
    :param margin: equivalence margin
    :param alpha: family-wise level
    :param family_size: number of tested comparisons in the family
    :param mde: minimum detectable effect at 80% power and level ``alpha / family_size``
    :param seeds_needed: seeds that detect the observed effect at 80% power and level ``alpha / family_size``
        (``None``: more than 1000, or the observed effect is 0)
    :param verdict: ``differs``, ``equivalent`` or ``unresolved``
    :param test: the test behind the verdict, in words
    :param reason: why there is no test (too few pairs), or ""
    :param differences: the per-seed differences
    """

    name: str
    n: int
    effect: float
    ci: tuple[float, float] | None
    sd: float
    p_raw: float
    p_adjusted: float
    p_equivalence: float
    p_equivalence_adjusted: float
    margin: float
    alpha: float
    family_size: int
    mde: float
    seeds_needed: int | None
    verdict: str
    test: str
    reason: str = ""
    differences: tuple[float, ...] = ()

    @property
    def within_margin(self) -> bool:
        """The (1 - 2 alpha) interval, the one TOST inverts, lies inside ``±margin``."""
        return self.p_equivalence <= self.alpha


def _paired_tests(d: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """
    The paired t-test against 0 and the TOST p for ``±margin`` of each row of ``d`` (pairs of one n, tested at once);
    exact limits for a row without spread (its t statistic is ±inf or undefined).
    """
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy's precision warning on rows without spread
        p = stats.ttest_1samp(d, 0.0, axis=1).pvalue
        if margin > 0:
            above = stats.ttest_1samp(d, -margin, axis=1, alternative="greater").pvalue
            below = stats.ttest_1samp(d, margin, axis=1, alternative="less").pvalue
            p_equivalence = np.maximum(above, below)
        else:
            p_equivalence = np.ones(len(d))
    flat = np.ptp(d, axis=1) == 0
    mean = d[:, 0]
    p = np.where(flat, np.where(mean == 0, 1.0, 0.0), p)
    p_equivalence = np.where(flat, np.where(np.abs(mean) < margin, 0.0, 1.0), p_equivalence)
    return p, p_equivalence


def compare_family(
    differences: Mapping[str, np.ndarray], alpha: float, margin: float, power: float = 0.8, min_n: int = 2
) -> dict[str, Comparison]:
    """
    One family of paired comparisons: paired t-test of each, Holm over the family, TOST with ``±margin``, minimum
    detectable effect and seeds needed (see the module docstring).

    :param differences: name -> per-seed differences (variant - baseline, or any per-seed contrast)
    :param alpha: family-wise level of both the difference and the equivalence claims
    :param margin: equivalence margin (> 0; 0 or NaN: no equivalence claim possible)
    :param power: power for the minimum detectable effect and the seeds needed
    :param min_n: comparisons with fewer pairs get no test and the verdict ``unresolved``
    :return: name -> comparison, in the order given
    """
    min_n = max(min_n, 2)
    arrays = {name: np.asarray(d, dtype=np.float64).ravel() for name, d in differences.items()}
    arrays = {name: d[np.isfinite(d)] for name, d in arrays.items()}
    raw = {}
    for n in sorted({len(d) for d in arrays.values() if len(d) >= min_n}):
        group = [name for name, d in arrays.items() if len(d) == n]
        p, p_equivalence = _paired_tests(np.stack([arrays[name] for name in group]), margin)
        raw.update({name: (float(p[i]), float(p_equivalence[i])) for i, name in enumerate(group)})
    raw = {name: raw[name] for name in arrays if name in raw}  # in the order given
    names = list(raw)
    p_adjusted = dict(zip(names, holm([raw[k][0] for k in names]), strict=True))
    p_equivalence_adjusted = dict(zip(names, holm([raw[k][1] for k in names]), strict=True))
    level = alpha / max(len(names), 1)
    result = {}
    for name, d in arrays.items():
        n = len(d)
        effect = float(d.mean()) if n else math.nan
        sd = float(d.std(ddof=1)) if n >= 2 else math.nan
        if name not in raw:
            result[name] = Comparison(
                name, n, effect, None, sd, math.nan, math.nan, math.nan, math.nan, margin, alpha, len(names),
                math.nan, None, UNRESOLVED, "no test",
                reason=f"n = {n} < {min_n} pairs: no test", differences=tuple(float(x) for x in d),
            )  # fmt: skip
            continue
        half = float(stats.t.ppf(1 - alpha / 2, n - 1) * sd / math.sqrt(n))
        p_adj, p_eq_adj = float(p_adjusted[name]), float(p_equivalence_adjusted[name])
        if p_adj <= alpha:
            verdict, test = DIFFERS, PAIRED_T
        elif p_eq_adj <= alpha:
            verdict, test = EQUIVALENT, TOST
        else:
            verdict, test = UNRESOLVED, f"{PAIRED_T}; {TOST}"
        result[name] = Comparison(
            name=name,
            n=n,
            effect=effect,
            ci=(effect - half, effect + half),
            sd=sd,
            p_raw=raw[name][0],
            p_adjusted=p_adj,
            p_equivalence=raw[name][1],
            p_equivalence_adjusted=p_eq_adj,
            margin=margin,
            alpha=alpha,
            family_size=len(names),
            mde=minimum_detectable_effect(sd, n, level, power),
            seeds_needed=seeds_needed(effect, sd, level, power),
            verdict=verdict,
            test=test,
            differences=tuple(float(x) for x in d),
        )
    return result
