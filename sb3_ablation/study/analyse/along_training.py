"""Effects along training: where in training a variant's return differs from the baseline's, as an estimate with
pointwise and simultaneous 95% bands over every evaluation step (descriptive: the plan's verdicts are on its declared
outcomes, never on these bands).

For each comparison (variant - baseline, paired by seed) and each evaluation step t, with ``d[i, t]`` the seeds'
differences of the mean evaluation return: the mean difference, the plan's estimate (its test's location, e.g.
Hodges-Lehmann), and bands ``mean_t ± q * se_t`` with ``se_t = sd_t / sqrt(n)``. The multipliers come from sign flips
of whole seeds (each seed's difference curve flipped at once, which keeps the correlation between steps), with the
studentized statistic ``T_t = |mean_t| / se_t`` recomputed for every sign pattern:

- simultaneous: ``q = c``, the 95% quantile over the patterns of ``max_t T_t`` (max-t; Westfall and Young 1993);
- pointwise: ``q = q_t``, the 95% quantile of ``T_t`` at that step alone (``q_t <= c``: the pointwise interval lies
  within the simultaneous band).

Each quantile is the larger of two: the patterns applied to the differences themselves (the test of "no difference
at any step"), and to the differences centred at their means (the band around the estimate). The first makes the
steps where the simultaneous band excludes 0 exactly those that the single-step max-t sign-flip test rejects: under
the null of differences symmetric about 0 at every step (two arms that are exchangeable within a seed: the paired
design's null) the band misses 0 somewhere with probability at most alpha, exactly (all 2^n patterns up to
:data:`~sb3_ablation.study.analyse.paired_methods.EXACT_MAX_N` pairs, the sign-flip test's seeded sample beyond), and
since the maximum over all steps is at least the maximum over the steps where the null holds, a step where it holds is
named with probability at most alpha whatever the other steps do. The second keeps the band's width where the effect
is large: there the patterns of the raw differences are dominated by the effect, the same at every step, and their
maximum would shrink towards a pointwise quantile. Taking the larger one never makes the test more liberal.
``benchmarks/along_training_calibration.py`` checks both claims by simulation (docs/calibration.md).

With few seeds the bands cannot exclude 0 anywhere: the smallest p-value of the sign flips is ``2 / 2^n``
(:attr:`AlongTraining.attainable`). The data are the runs the verdicts use (the plan's confirmatory seeds where it
names them), at the evaluation steps every paired run recorded. A factorial design's cells are compared with the
baseline only where they remove one switch from it (the leave-one-out comparisons inside the design); a cell that
changes several switches is left out (:attr:`EnvAlongTraining.left_out`), and a fraction without such cells has none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sb3_ablation.study.analyse.factorial import study_design
from sb3_ablation.study.analyse.paired_methods import sign_patterns
from sb3_ablation.study.analyse.paired_tests import ESTIMATE_NAMES, location
from sb3_ablation.study.analyse.results import RunCurves, StudyData
from sb3_ablation.study.plan.variants import parse_variant

#: the evaluation metric whose difference is followed along training
ALONG_METRIC = "mean_return"
#: one minus the coverage of both bands
ALONG_ALPHA = 0.05
#: the direction of a step where the simultaneous band lies above 0 (variant ahead) or below it (variant behind)
AHEAD, BEHIND = "ahead", "behind"
#: sign patterns x steps of one chunk of the statistics
_CHUNK = 2_000_000
#: differences closer than this fraction of a step's scale count as no spread (as the paired tests count ties)
_TIE = 1e-9


@dataclass(frozen=True)
class Bands:
    """
    The sign-flip bands of the mean of difference curves (see the module docstring).

    :param mean: the mean difference per step
    :param se: its standard error per step (``sd / sqrt(n)``)
    :param pointwise: ``(2, steps)``: each step's 95% interval
    :param simultaneous: ``(2, steps)``: the 95% band over every step at once
    :param critical: the simultaneous band's multiplier ``c`` of the standard error
    :param p_any: the max-t sign-flip p-value of "no difference at any step"
    :param patterns: the sign patterns counted (the observed one included)
    :param exact: every pattern (``False``: the seeded random sample of the sign-flip test)
    """

    mean: np.ndarray
    se: np.ndarray
    pointwise: np.ndarray
    simultaneous: np.ndarray
    critical: float
    p_any: float
    patterns: int
    exact: bool

    def excluded(self) -> np.ndarray:
        """Per step: +1 where the simultaneous band lies above 0, -1 where below, 0 where it holds 0."""
        low, high = self.simultaneous
        return np.where(low > 0, 1, np.where(high < 0, -1, 0))


def _statistics(signs: np.ndarray, d: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """
    ``|mean_t| / se_t`` of every sign pattern (rows of ``signs``) applied to the difference curves ``d`` (seeds x
    steps). With ``d = mu + r`` (``mu`` the mean over seeds) and ``sbar`` the pattern's mean sign, the flipped values
    have mean ``mu sbar + q``, ``q = mean(s r)``, and sum of squared deviations ``sum(r^2) + n mu^2 (1 - sbar^2) -
    2 n mu sbar q - n q^2``: no difference of two large numbers where the mean dwarfs the spread (as the plain sum of
    squares minus ``n`` mean squared would be). No spread: 0 where the mean is 0 too, else infinite (the t-test's limit).
    """
    n = d.shape[0]
    mu = d.mean(axis=0)
    r = d - mu
    sbar = signs.mean(axis=1)[:, None]
    q = signs @ r / n
    means = mu * sbar + q
    squares = np.sum(r**2, axis=0) + n * mu**2 * (1 - sbar**2) - 2 * n * mu * sbar * q - n * q**2
    se = np.sqrt(np.maximum(squares, 0.0) / (n - 1) / n)
    tolerance = _TIE * scale
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(means) / se
    flat = se <= tolerance
    statistics: np.ndarray = np.where(flat, np.where(np.abs(means) > tolerance, np.inf, 0.0), t)
    return statistics


def _largest(values: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` largest values along the first axis (all of them when there are fewer)."""
    if len(values) <= count:
        return values
    kept: np.ndarray = np.partition(values, len(values) - count, axis=0)[len(values) - count :]
    return kept


def _quantiles(signs: np.ndarray, d: np.ndarray, scale: np.ndarray, rank: int) -> tuple[float, np.ndarray, np.ndarray]:
    """
    The ``rank``-th largest (among the rows of ``signs``) of ``max_t T_t`` and of each ``T_t``, and the maxima of every
    pattern, computed a chunk of patterns at a time.
    """
    step = max(1, _CHUNK // d.shape[1])
    top_max, top_each, maxima = np.zeros(0), np.zeros((0, d.shape[1])), []
    for start in range(0, len(signs), step):
        statistics = _statistics(signs[start : start + step], d, scale)
        maxima.append(statistics.max(axis=1))
        top_max = _largest(np.concatenate([top_max, maxima[-1]]), rank)
        top_each = _largest(np.concatenate([top_each, statistics]), rank)
    return float(top_max.min()), top_each.min(axis=0), np.concatenate(maxima)


def sign_flip_bands(d: np.ndarray, alpha: float = ALONG_ALPHA, seed: int = 0) -> Bands:
    """
    Pointwise and simultaneous (1 - alpha) bands of the mean of difference curves, by sign flips of whole curves (see
    the module docstring).

    :param d: the differences, seeds x steps (n >= 2 seeds, finite)
    :param alpha: one minus the coverage
    :param seed: seed of the sign patterns sampled beyond :data:`~sb3_ablation.study.analyse.paired_methods.EXACT_MAX_N`
        seeds
    :return: the bands
    """
    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] < 2 or d.shape[1] < 1:
        raise ValueError(f"sign_flip_bands: d has shape {d.shape}; expected seeds x steps with 2 or more seeds")
    if not np.all(np.isfinite(d)):
        raise ValueError("sign_flip_bands: d holds non-finite values; expected finite differences at every step")
    n = d.shape[0]
    signs, weight, total = sign_patterns(n, seed)
    # a value above the j-th largest of the patterns' statistics has p <= alpha: the band's multiplier is the
    # (j + 1)-th largest, counted with the weight of each row (a row stands for itself and its negative when exact)
    j = math.floor(alpha * total + 1e-12)
    rank = j // weight + 1
    mean = d.mean(axis=0)
    se = d.std(axis=0, ddof=1) / math.sqrt(n)
    scale = np.max(np.abs(d), axis=0)
    raw_critical, raw_each, maxima = _quantiles(signs, d, scale, rank)
    centred = d - mean
    centred_critical, centred_each, _ = _quantiles(signs, centred, np.max(np.abs(centred), axis=0), rank)
    critical = max(raw_critical, centred_critical)
    each = np.maximum(raw_each, centred_each)
    observed = maxima[0]  # the first pattern keeps every sign
    p_any = min(1.0, weight * int(np.sum(maxima >= observed * (1 - 1e-12))) / total)
    # inf * 0 where a step has no spread: a band of no width; inf where too few seeds bound it (no pattern reaches alpha)
    with np.errstate(invalid="ignore"):
        simultaneous = np.nan_to_num(critical * se, nan=0.0, posinf=np.inf)
        pointwise = np.nan_to_num(each * se, nan=0.0, posinf=np.inf)
    return Bands(
        mean,
        se,
        np.array([mean - pointwise, mean + pointwise]),
        np.array([mean - simultaneous, mean + simultaneous]),
        critical,
        p_any,
        total,
        weight == 2,
    )


@dataclass(frozen=True)
class Span:
    """
    Consecutive evaluation steps where the simultaneous band lies on one side of 0.

    :param direction: :data:`AHEAD` (the variant's return above the baseline's) or :data:`BEHIND`
    :param first: the span's first step
    :param last: its last step (``first`` for a single step)
    """

    direction: str
    first: int
    last: int


@dataclass(frozen=True)
class AlongTraining:
    """
    One comparison along training.

    :param variant: the variant
    :param baseline: the variant it is compared with
    :param seeds: the seeds with a run of both (the pairs)
    :param timesteps: the evaluation steps every pair recorded
    :param estimate: the plan's estimate of the difference at each step (its test's location, e.g. Hodges-Lehmann)
    :param estimate_name: what that estimate is
    :param bands: the mean difference with its bands
    :param alpha: one minus the bands' coverage
    """

    variant: str
    baseline: str
    seeds: tuple[int, ...]
    timesteps: np.ndarray
    estimate: np.ndarray
    estimate_name: str
    bands: Bands
    alpha: float = ALONG_ALPHA

    @property
    def smallest_p(self) -> float:
        """The smallest p-value the sign patterns can give (``2 / 2^n`` when every pattern is counted)."""
        return 2.0 / self.bands.patterns if self.bands.exact else 1.0 / self.bands.patterns

    @property
    def attainable(self) -> bool:
        """Whether the simultaneous band can exclude 0 anywhere at these seeds."""
        return self.smallest_p <= self.alpha

    def spans(self) -> list[Span]:
        """The runs of consecutive steps where the simultaneous band excludes 0, in training order."""
        spans: list[Span] = []
        previous = 0
        for step, side in zip(self.timesteps.tolist(), self.bands.excluded().tolist(), strict=True):
            if side and side == previous:
                spans[-1] = Span(spans[-1].direction, spans[-1].first, int(step))
            elif side:
                spans.append(Span(AHEAD if side > 0 else BEHIND, int(step), int(step)))
            previous = side
        return spans


@dataclass(frozen=True)
class EnvAlongTraining:
    """
    :param env: the task
    :param metric: the evaluation metric followed (:data:`ALONG_METRIC`)
    :param comparisons: variant -> its comparison with the baseline, in the study's order
    :param left_out: the variants not compared: a factorial design's cells that change more than one switch from the
        baseline, and variants with fewer than 2 seeds paired with it or no step that every pair recorded
    :param factorial: the env's variants form a factorial design (or fraction)
    """

    env: str
    metric: str
    comparisons: dict[str, AlongTraining]
    left_out: tuple[str, ...] = ()
    factorial: bool = False


def _by_step(run: RunCurves) -> dict[int, float]:
    timesteps, values = run.curve(ALONG_METRIC)
    return {int(t): float(v) for t, v in zip(timesteps, values, strict=True)}


def _paired_curves(data: StudyData, env: str, variant: str, baseline: str) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """The seeds with a run of both arms, the steps all of those runs recorded with a finite return, and the
    differences there (seeds x steps)."""
    by_variant = data.runs.get(env, {})
    variant_curves = {run.seed: _by_step(run) for run in by_variant.get(variant, [])}
    baseline_curves = {run.seed: _by_step(run) for run in by_variant.get(baseline, [])}
    seeds = tuple(sorted(set(variant_curves) & set(baseline_curves)))
    curves = [runs[seed] for seed in seeds for runs in (variant_curves, baseline_curves)]
    common = set.intersection(*(set(curve) for curve in curves)) if curves else set()
    steps = sorted(t for t in common if all(math.isfinite(curve[t]) for curve in curves))
    d = [[variant_curves[seed][t] - baseline_curves[seed][t] for t in steps] for seed in seeds]
    return seeds, np.array(steps, dtype=np.int64), np.array(d, dtype=np.float64).reshape(len(seeds), len(steps))


def _one_switch_from(baseline: str, variants: list[str]) -> list[str]:
    """The variants that change exactly one switch of the baseline (none where the baseline is a reference row)."""
    base = parse_variant(baseline)
    if base.is_reference:
        return []
    kept = []
    for name in variants:
        variant = parse_variant(name)
        if not variant.is_reference and sum(variant.switches[s] != base.switches[s] for s in base.switches) == 1:
            kept.append(name)
    return kept


def env_along_training(
    data: StudyData, env: str, baseline: str | None, test: str, seed: int, alpha: float = ALONG_ALPHA
) -> EnvAlongTraining | None:
    """
    Every comparison of one task along training (``None``: no baseline, or no runs of it on the task).

    :param data: the runs the verdicts use (the plan's confirmatory seeds where it names them)
    :param env: the task
    :param baseline: the variant the others are compared with
    :param test: the plan's test (its estimate is reported at each step beside the mean)
    :param seed: seed of the sign patterns sampled beyond 16 pairs
    :param alpha: one minus the bands' coverage
    """
    by_variant = data.runs.get(env, {})
    if baseline is None or baseline not in by_variant:
        return None
    others = [v for v in data.variants if v in by_variant and v != baseline]
    factorial = study_design(data, env) is not None
    compared = _one_switch_from(baseline, others) if factorial else others
    comparisons = {}
    for variant in compared:
        seeds, steps, d = _paired_curves(data, env, variant, baseline)
        if len(seeds) < 2 or not len(steps):
            continue
        estimate = np.array([location(d[:, i], test) for i in range(len(steps))])
        bands = sign_flip_bands(d, alpha, seed)
        comparisons[variant] = AlongTraining(variant, baseline, seeds, steps, estimate, ESTIMATE_NAMES[test], bands, alpha)
    left_out = tuple(v for v in others if v not in comparisons)
    return EnvAlongTraining(env, ALONG_METRIC, comparisons, left_out, factorial)


__all__ = [
    "AHEAD",
    "ALONG_ALPHA",
    "ALONG_METRIC",
    "BEHIND",
    "AlongTraining",
    "Bands",
    "EnvAlongTraining",
    "Span",
    "env_along_training",
    "sign_flip_bands",
]
