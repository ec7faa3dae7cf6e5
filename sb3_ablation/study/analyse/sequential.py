"""Group-sequential looks: Lan-DeMets alpha spending (O'Brien-Fleming and Pocock types), the boundaries of a design's
looks, where one comparison stops, and the decisions of a family of comparisons analysed at the same looks.

A study with ``looks`` in its plan (e.g. ``[5, 10, 20]``) analyses its primary outcome when the first 5, 10 and 20 of
its seeds (in increasing order) have finished; the study runs the next block of seeds only for the comparisons still
open (``sb3-ablation study``). The family's procedure (:func:`sequential_family`) is the graphical, Holm-type
group-sequential procedure of Maurer and Bretz (2013, "Multiple testing in group sequential trials using graphical
approaches", Statistics in Biopharmaceutical Research 5(4)):

- every comparison has two hypotheses, "no difference" (tested at every look, by the plan's paired test, its p-value
  read as ``|z| = Phi^-1(1 - p / 2)`` against the comparison's group-sequential boundaries) and "not equivalent"
  (TOST, tested once, at the last look, against the comparison's level);
- a comparison's level is alpha over the family's divisor, the divisor counted as in
  :func:`~sb3_ablation.study.analyse.family_verdicts.decide_family`: the comparisons with a hypothesis not yet rejected
  (Shaffer: one test for both claims, so at most one of a comparison's hypotheses is true), or the hypotheses not yet
  rejected (Holm over 2m, when the two claims use different tests);
- a rejection frees its share: the others' boundaries are recomputed at their larger level, at every look reached so
  far (Maurer and Bretz's recycling), until nothing more is rejected.

So the family-wise error of ``differs`` and ``equivalent`` together is at most alpha, exactly as for one look, as long
as the looks' statistics behave like a Brownian motion's (a normal approximation for the rank and permutation tests;
``benchmarks/inference_calibration.py`` checks the error by simulation, failure seeds and heavy tails included). A
comparison stopped early for ``differs`` keeps the estimate of its stopping look, which overstates the effect on
average (the price of stopping early); the report says so.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from sb3_ablation.study.analyse.family_verdicts import DIFFERS, EQUIVALENT, UNRESOLVED

#: a comparison whose next look has not been reached and which no look has decided yet
OPEN = "open"
SEQUENTIAL_GUARANTEE = (
    "`differs` and `equivalent` share one family-wise error rate across the looks: each comparison's \"no "
    'difference" is tested at every look against group-sequential boundaries at its share of alpha and its "not '
    "equivalent\" once at the last look; a rejection passes its share to the others (Maurer and Bretz's graphical "
    "Holm procedure for group-sequential designs), so the probability of any false `differs` or false `equivalent` in "
    "a family, over all looks, is at most alpha."
)
#: the sequential guarantee of each claims rule (:data:`~sb3_ablation.study.plan.analysis_plan.CLAIMS`)
SEQUENTIAL_GUARANTEES = {
    "differs-and-equivalent": SEQUENTIAL_GUARANTEE,
    "differs": (
        'The plan makes no equivalence claims: each comparison\'s "no difference" is tested at every look against '
        "group-sequential boundaries at its share of alpha; a rejection passes its share to the others (Maurer and "
        "Bretz's graphical Holm procedure for group-sequential designs), so the probability of any false `differs` in "
        "a family, over all looks, is at most alpha."
    ),
    "partitioned": (
        "`differs` and `equivalent` share one family-wise error rate across the looks: a comparison's two null "
        'hypotheses are disjoint (at most one is true), so its "no difference" is tested at every look against '
        'group-sequential boundaries that spend the comparison\'s share of alpha, and its "not equivalent" once at '
        "the last look at that same share; the share passes to the others once both of its comparison's hypotheses "
        "are rejected (Maurer and Bretz's graphical procedure over the comparisons; the partitioning principle, "
        "Finner and Strassburger 2002), so the probability of any false `differs` or false `equivalent` in a family, "
        "over all looks, is at most alpha (simulated with the package's tests: docs/sequential-calibration.md)."
    ),
}
BIAS_NOTE = (
    "A comparison stopped early has the estimate of its stopping look: an effect large enough to cross an early "
    "boundary is, on average, overstated (conditional bias after early stopping); the verdict's error control is not "
    "affected."
)


def spent_alpha(kind: str, t: float, alpha: float) -> float:
    """
    The Lan-DeMets spending function: the two-sided error spent by information fraction t.

    :param kind: ``"obrien-fleming"`` (2 - 2 Phi(z_{alpha/2} / sqrt(t))) or ``"pocock"`` (alpha ln(1 + (e - 1) t))
    :param t: information fraction in (0, 1]
    :param alpha: the design's two-sided level
    :return: the error spent up to t
    """
    if kind == "obrien-fleming":
        return float(2 - 2 * stats.norm.cdf(stats.norm.isf(alpha / 2) / math.sqrt(t)))
    if kind == "pocock":
        return float(alpha * math.log(1 + (math.e - 1) * t))
    raise ValueError(f"unknown boundary {kind!r}; expected 'obrien-fleming' or 'pocock'")


def sequential_boundaries(looks: Sequence[int], alpha: float, kind: str = "obrien-fleming") -> tuple[float, ...]:
    """
    Two-sided critical |z| at each look of a group-sequential design with Lan-DeMets alpha spending.

    The look-k statistic is ``Z_k = W(t_k) / sqrt(t_k)`` for a Brownian motion W at information fractions
    ``t_k = n_k / n_K`` (so looks correlate as sqrt(n_i / n_j)); boundary k makes the probability of crossing first at
    look k equal the error spent between looks k - 1 and k. The crossing probabilities are computed by numerical
    integration (the Armitage-McPherson-Rowe recursion over the density of W on the continuation region, Simpson's
    rule), deterministic to about 1e-8.

    :param looks: increasing seed counts at which the design analyses (the last one: the planned total)
    :param alpha: the design's two-sided level
    :param kind: ``"obrien-fleming"`` or ``"pocock"`` (Lan-DeMets spending functions of those types)
    :return: the critical |z| per look
    """
    n = np.asarray(looks, dtype=np.float64)
    if n.ndim != 1 or not len(n) or n[0] <= 0 or np.any(np.diff(n) <= 0):
        raise ValueError(f"looks must be positive and increasing, got {list(looks)}")
    fractions = n / n[-1]
    spent = np.array([spent_alpha(kind, t, alpha) for t in fractions])
    increments = np.diff(spent, prepend=0.0)
    steps = np.sqrt(np.diff(fractions, prepend=0.0))  # sd of W's increment before each look
    spacing = float(steps.min()) / 40
    boundaries = [float(stats.norm.isf(increments[0] / 2))]
    grid = _grid(min(boundaries[0], _Z_MAX) * steps[0], spacing)
    density = stats.norm.pdf(grid, scale=steps[0])  # W(t_1), on the continuation region
    for k in range(1, len(n)):
        root = math.sqrt(fractions[k])
        weights = _simpson(grid) * density
        c = _boundary(increments[k], grid, weights, steps[k], root)
        boundaries.append(c)
        if k < len(n) - 1:  # the sub-density of W(t_k) on the new continuation region
            previous, grid = grid, _grid(min(c, _Z_MAX) * root, spacing)
            density = stats.norm.pdf((grid[:, None] - previous[None, :]) / steps[k]) / steps[k] @ weights
    return tuple(boundaries)


def _crossing(c: float, grid: np.ndarray, weights: np.ndarray, sd: float, root: float) -> float:
    """P(not stopped before, |W(t_k)| >= c sqrt(t_k)): W(t_k) = W(t_k-1) + N(0, sd^2), integrated over the grid."""
    outside = stats.norm.cdf((-c * root - grid) / sd) + stats.norm.sf((c * root - grid) / sd)
    return float(weights @ outside)


def _boundary(target: float, grid: np.ndarray, weights: np.ndarray, sd: float, root: float) -> float:
    """The |z| whose first-crossing probability is ``target``; infinite when nothing is spent at this look."""
    if target <= 0:
        return math.inf
    if _crossing(_Z_MAX, grid, weights, sd, root) >= target:
        return _Z_MAX
    return float(optimize.brentq(lambda c: _crossing(c, grid, weights, sd, root) - target, 1e-6, _Z_MAX, xtol=1e-10))


_Z_MAX = 40.0


def _grid(half_width: float, spacing: float) -> np.ndarray:
    """An odd number (401 to 8001) of equally spaced points over [-half_width, half_width]."""
    points = 2 * math.ceil(half_width / spacing) + 1
    return np.linspace(-half_width, half_width, min(max(points, 401), 8001))


def _simpson(grid: np.ndarray) -> np.ndarray:
    """Simpson weights on an odd number of equally spaced points."""
    h: float = grid[1] - grid[0]
    w = np.ones(len(grid))
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w * h / 3


def nominal_alpha(boundaries: Sequence[float]) -> tuple[float, ...]:
    """
    The nominal two-sided level of each look's boundary.

    :param boundaries: critical |z| per look
    :return: 2 (1 - Phi(c)) per look
    """
    return tuple(float(2 * stats.norm.sf(c)) for c in boundaries)


def sequential_decision(p_values: Sequence[float], boundaries: Sequence[float]) -> int | None:
    """
    Where a group-sequential design stops.

    :param p_values: each look's two-sided p-value (NaN: no test at that look)
    :param boundaries: critical |z| per look (:func:`sequential_boundaries`)
    :return: the first look (0-based) whose p, as |z| = Phi^-1(1 - p / 2), reaches its boundary; ``None``: none did
    """
    for k, (p, c) in enumerate(zip(p_values, boundaries, strict=False)):
        if math.isfinite(p) and stats.norm.isf(p / 2) >= c:
            return k
    return None


@functools.lru_cache(maxsize=512)
def _boundaries(looks: tuple[int, ...], alpha: float, kind: str) -> tuple[float, ...]:
    return sequential_boundaries(looks, alpha, kind)


@dataclass(frozen=True)
class SequentialDecision:
    """
    One comparison of a group-sequential family.

    :param verdict: :data:`DIFFERS` (a look crossed its boundary), :data:`EQUIVALENT` (the TOST at the last look),
        :data:`UNRESOLVED` (the last look reached, neither), or :data:`OPEN` (the design goes on to the next look)
    :param look: the 0-based look that decided it (``None``: open, or unresolved at the last look)
    :param level: the comparison's share of alpha when the procedure ended
    :param boundaries: its critical |z| per look at that level
    :param p_values: the paired test's two-sided p-value at each look reached (NaN: not reached)
    :param p_equivalence: the TOST p-value at the last look (NaN: not reached, or no margin)
    """

    verdict: str
    look: int | None
    level: float
    boundaries: tuple[float, ...]
    p_values: tuple[float, ...]
    p_equivalence: float

    @property
    def looks_reached(self) -> int:
        return sum(1 for p in self.p_values if not math.isnan(p))


def sequential_family(
    p_values: Mapping[str, Sequence[float]],
    p_equivalence: Mapping[str, float],
    looks: Sequence[int],
    alpha: float,
    kind: str = "obrien-fleming",
    exclusive: bool = True,
    equivalence_claims: bool = True,
) -> dict[str, SequentialDecision]:
    """
    The decisions of a family of comparisons analysed at the same group-sequential looks (see the module docstring).

    :param p_values: comparison -> its paired test's two-sided p-value at each look, in look order (NaN, or a shorter
        sequence: the look is not reached yet)
    :param p_equivalence: comparison -> its TOST p-value at the last look (NaN or missing: not reached, or no margin)
    :param looks: the design's seed counts, increasing
    :param alpha: the family-wise level of both claims together
    :param kind: the alpha-spending boundary, ``"obrien-fleming"`` or ``"pocock"``
    :param exclusive: one test for both claims (Shaffer's divisor: comparisons), else Holm's (hypotheses)
    :param equivalence_claims: the family has "not equivalent" hypotheses (a margin); they count in the divisor from
        the first look on, whether or not the last look has been reached
    :return: comparison -> decision, in the order given
    """
    looks = tuple(int(n) for n in looks)
    last = len(looks) - 1
    padded = {
        name: tuple(float(p) for p in list(ps)[: len(looks)]) + (math.nan,) * max(0, len(looks) - len(ps))
        for name, ps in p_values.items()
    }
    equivalence = {name: float(p_equivalence.get(name, math.nan)) for name in padded}
    # the family's hypotheses: (comparison, 0) "no difference"; (comparison, 1) "not equivalent", with a margin
    unrejected = {(name, claim) for name in padded for claim in ((0, 1) if equivalence_claims else (0,))}
    decided: dict[str, tuple[str, int | None]] = {}

    def level() -> float:
        divisor = len({name for name, _ in unrejected}) if exclusive else len(unrejected)
        return alpha / max(divisor, 1)

    while True:
        share = level()
        boundaries = _boundaries(looks, share, kind)
        rejected = []
        for name, kind_of_claim in sorted(unrejected):
            if name in decided:
                continue  # stopped: its other hypothesis is not tested any more (and keeps its share)
            if kind_of_claim == 0:
                look = sequential_decision(padded[name], boundaries)
                if look is not None:
                    rejected.append(((name, 0), (DIFFERS, look)))
            elif equivalence[name] <= share:
                rejected.append(((name, 1), (EQUIVALENT, last)))
        if not rejected:
            break
        for hypothesis, decision in rejected:
            unrejected.discard(hypothesis)
            decided.setdefault(hypothesis[0], decision)
    share = level()
    boundaries = _boundaries(looks, share, kind)
    result = {}
    for name, ps in padded.items():
        verdict, look = decided.get(name, (UNRESOLVED if not math.isnan(ps[last]) else OPEN, None))
        result[name] = SequentialDecision(verdict, look, share, boundaries, ps, equivalence[name])
    return result
