"""Calibration of the paired tests of ``sb3_ablation.study.analyse.paired_tests`` on simulated RL seeds: size, power,
interval coverage and equivalence behaviour when a few seeds collapse; chooses the report's default test.

    OMP_NUM_THREADS=1 python benchmarks/inference_calibration.py            # writes docs/calibration.{md,json}
    OMP_NUM_THREADS=1 python benchmarks/inference_calibration.py --quick --out /tmp/calibration
    OMP_NUM_THREADS=1 python benchmarks/inference_calibration.py --reuse old-calibration.json --study-reps 1000

Each replication draws n seeds of two arms, baseline and variant, and tests the per-seed differences (variant -
baseline) with every candidate test exactly as the report runs it (``paired_tests.paired_p_values`` and
``paired_tests.tost_p_value`` with the library's resampling seed 0). The seed's shared component cancels in the difference,
so an arm's return is its own noise (SD 1/sqrt(2): clean differences have SD 1, the unit of every number here), plus
the shift for the variant, minus a drop of Uniform(10, 30) SDs on a seed where that arm fails (catastrophic failure).

The scenarios that look like the studies (``--study-reps`` replications, 10 seeds) run each (test, equivalence test)
pair a plan can name through the report's own path: six variants sharing one TD3 arm, failures in the variant only,
the Hopper half fraction's bimodal returns at its failure rates, and null 2^6 and 2^(6-1) factorials read as Yates
effects, with the learning region found from the failures, floor-labelled main effects and the conditional effects
within the region. The plan's default pair must follow from them (:func:`defaults_follow`; a unit test checks it).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

import numpy as np
from scipy import stats

from sb3_ablation.study.analyse import family_verdicts, paired_methods, paired_tests
from sb3_ablation.study.analyse.effects import per_seed_effects
from sb3_ablation.study.analyse.family_verdicts import DIFFERS, EQUIVALENT, UNRESOLVED
from sb3_ablation.study.analyse.inference import compare_family
from sb3_ablation.study.analyse.learning_region import LearningRegion, conditional_effects, floor_label, learning_region
from sb3_ablation.study.analyse.two_part import rare_failure_guard, rate
from sb3_ablation.study.plan import analysis_plan
from sb3_ablation.study.plan.designs import Design, effect_words, full_factorial, half_fraction
from sb3_ablation.study.plan.learning_rules import LearningRules
from sb3_ablation.switches import SWITCHES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from along_training_calibration import kept_section  # the section of calibration.md it writes, kept

ALPHA = 0.05
#: the variant's shift in the power scenarios, in SDs of the clean per-seed differences (variant worse)
SHIFT = -1.0
#: the equivalence margin, in SDs of the clean per-seed differences
MARGIN = 1.0
#: a failed seed's return drops by Uniform(DROP) SDs
DROP = (10.0, 30.0)
NS = (5, 10, 20)
REPS = 2_000
QUICK_REPS = 20
#: a candidate may lose at most this share of the paired t-test's power under normal noise at n = 10
MAX_POWER_LOSS = 0.10
REFERENCE_N = 10
#: draws for the population targets of asymmetric scenarios (pseudo-median, trimmed mean)
TARGET_DRAWS = 2_000_000
OUT = Path(__file__).resolve().parent.parent / "docs"

#: level at most alpha by construction under sign-symmetric nulls (the Monte Carlo sign flips marginally over patterns)
EXACT_TESTS = ("wilcoxon", "signflip", "signflip_trimmed")

TARGETS = {
    "t": "mean",
    "wilcoxon": "pseudo_median",
    "signflip": "mean",
    "signflip_trimmed": "trimmed_mean",
    "bootstrap_t": "mean",
    "bootstrap_percentile": "mean",
}


@dataclass(frozen=True)
class Scenario:
    """
    :param name: short label
    :param kind: ``null`` (exchangeable arms: every test's H0 holds), ``power`` (a shift, the basis of the choice),
        ``failures`` (the variant only fails more often) or ``skewed`` (mean 0, pseudo-median not 0)
    :param noise: each arm's noise: ``normal``, ``t3`` (heavy tails) or ``skewed`` (centred exponential)
    :param shift: the variant's shift (SDs)
    :param fail_baseline: probability that a baseline seed fails
    :param fail_variant: probability that a variant seed fails
    :param skewed_effect: the variant's effect varies by seed: a centred lognormal(0, 1) term with SD 1
    """

    name: str
    kind: str
    noise: str = "normal"
    shift: float = 0.0
    fail_baseline: float = 0.0
    fail_variant: float = 0.0
    skewed_effect: bool = False

    @property
    def symmetric(self) -> bool:
        """The differences are symmetric about the shift: every test's target is the shift."""
        return self.fail_baseline == self.fail_variant and not self.skewed_effect


def scenarios() -> list[Scenario]:
    """The simulated situations: nulls, shifts, failures in one or both arms, skew."""
    rates = (0.1, 0.2, 0.3)
    result = [Scenario("normal", "null"), Scenario("t3", "null", "t3"), Scenario("skewed returns", "null", "skewed")]
    result += [Scenario(f"failures {r:.0%} both arms", "null", fail_baseline=r, fail_variant=r) for r in rates]
    result += [Scenario("shift, normal", "power", shift=SHIFT), Scenario("shift, t3", "power", "t3", SHIFT)]
    result += [Scenario("shift, skewed returns", "power", "skewed", SHIFT)]
    result += [
        Scenario(f"shift + failures {r:.0%} both arms", "power", shift=SHIFT, fail_baseline=r, fail_variant=r) for r in rates
    ]
    result += [Scenario(f"shift + failures {r:.0%} variant", "power", shift=SHIFT, fail_variant=r) for r in rates]
    result += [Scenario(f"failures {r:.0%} variant, no shift", "failures", fail_variant=r) for r in rates]
    result += [Scenario("skewed effect, mean 0", "skewed", skewed_effect=True)]
    return result


def is_failure_power(scenario: Scenario) -> bool:
    """The scenarios whose average power chooses the default: a shift plus failures in one or both arms."""
    return scenario.kind == "power" and (scenario.fail_baseline > 0 or scenario.fail_variant > 0)


# ----------------------------------------------------------------------------------------------------------------------
# Simulation
# ----------------------------------------------------------------------------------------------------------------------


def _noise(kind: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """One arm's noise with SD 1/sqrt(2)."""
    if kind == "normal":
        draws = rng.standard_normal(shape)
    elif kind == "t3":
        draws = rng.standard_t(3, shape) / math.sqrt(3)
    else:
        draws = rng.exponential(1.0, shape) - 1.0
    return draws / math.sqrt(2)


def _arm(scenario: Scenario, rng: np.random.Generator, shape: tuple[int, ...], fail: float) -> np.ndarray:
    values = _noise(scenario.noise, rng, shape)
    if fail > 0:
        values -= (rng.random(shape) < fail) * rng.uniform(*DROP, shape)
    return values


def differences(scenario: Scenario, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Per-seed differences, variant - baseline."""
    baseline = _arm(scenario, rng, shape, scenario.fail_baseline)
    variant = scenario.shift + _arm(scenario, rng, shape, scenario.fail_variant)
    if scenario.skewed_effect:
        sigma = 1.0
        mean, sd = math.exp(sigma**2 / 2), math.sqrt((math.exp(sigma**2) - 1) * math.exp(sigma**2))
        variant += (rng.lognormal(0.0, sigma, shape) - mean) / sd
    return variant - baseline


@cache
def targets(scenario: Scenario, seed: int) -> dict[str, float]:
    """
    The population parameters the intervals target: the mean (exact), the pseudo-median (median of (D + D') / 2) and
    the 20% trimmed mean; all equal the shift when the differences are symmetric, else by simulation.
    """
    mean = scenario.shift + float(np.mean(DROP)) * (scenario.fail_baseline - scenario.fail_variant)
    if scenario.symmetric:
        return {"mean": mean, "pseudo_median": scenario.shift, "trimmed_mean": scenario.shift}
    rng = np.random.default_rng(np.random.SeedSequence((seed, 999)))
    draws = differences(scenario, rng, (2, TARGET_DRAWS))
    return {
        "mean": mean,
        "pseudo_median": float(np.median(draws.mean(axis=0))),
        "trimmed_mean": float(stats.trim_mean(draws[0], paired_methods.TRIM)),
    }


def evaluate(scenario: Scenario, n: int, reps: int, seed: int, index: int) -> dict[str, dict[str, float]]:
    """
    Every test's rates in one scenario at one n.

    :return: test -> ``differs`` (two-sided rejection of no difference), ``equivalent`` (the verdict of a family of
        one: TOST rejects, no difference is not rejected), ``coverage`` (of the test's own target) and
        ``coverage_of_mean``
    """
    rng = np.random.default_rng(np.random.SeedSequence((seed, index, n)))
    d = differences(scenario, rng, (reps, n))
    truth = targets(scenario, seed)
    result = {}
    for test in paired_tests.TESTS:
        cache: dict[float, np.ndarray] = {}

        def p_at(shift: float, test: str = test, cache: dict[float, np.ndarray] = cache) -> np.ndarray:
            if shift not in cache:
                cache[shift] = paired_tests.paired_p_values(d, test, shift, "two-sided")
            return cache[shift]

        p_differs = p_at(0.0)
        p_equivalent = paired_tests.tost_p_value(d, test, MARGIN)
        equivalent = (p_equivalent <= ALPHA) & (p_differs > ALPHA)
        _check_verdicts(p_differs[:50], p_equivalent[:50], equivalent[:50], test, n)
        result[test] = {
            "differs": float(np.mean(p_differs <= ALPHA)),
            "equivalent": float(np.mean(equivalent)),
            "coverage": float(np.mean(p_at(truth[TARGETS[test]]) > ALPHA)),
            "coverage_of_mean": float(np.mean(p_at(truth["mean"]) > ALPHA)),
        }
    return result


def _check_verdicts(p_differs: np.ndarray, p_equivalent: np.ndarray, equivalent: np.ndarray, test: str, n: int) -> None:
    """The shortcut for the verdict of a family of one agrees with family_verdicts.decide_family."""
    results = [
        paired_tests.PairedResult(test, n, 0.0, 0.0, 0.0, float(a), float(b))
        for a, b in zip(p_differs, p_equivalent, strict=True)
    ]
    for result, shortcut in zip(results, equivalent, strict=True):
        verdict = family_verdicts.decide_family([result], ALPHA)[0].verdict
        if (verdict == family_verdicts.EQUIVALENT) != bool(shortcut):
            raise AssertionError(f"verdict shortcut disagrees with decide_family for {result}")


# ----------------------------------------------------------------------------------------------------------------------
# Scenarios that look like the studies: six variants sharing one TD3 arm, failures in the variant only, Hopper's
# bimodal returns with a floor, and null factorials read through the factorial pipeline
# ----------------------------------------------------------------------------------------------------------------------

#: seeds per arm in the studies (the sequential calibration runs the families' scenarios at looks of 10 and 20 seeds)
STUDY_NS = (10,)
#: a leave-one-out study's family: six variants, each compared with the one TD3 arm they share
FAMILY = 6
#: (test, equivalence test) pairs as the plan names them; the plan's defaults are among them
PAIRS = (
    ("t", "t"),
    ("wilcoxon", "wilcoxon"),
    (analysis_plan.DEFAULT_TEST, analysis_plan.DEFAULT_EQUIVALENCE_TEST),
    ("signflip", "signflip"),
    ("signflip_trimmed", "signflip_trimmed"),
)
#: the claims rule of each pair's plan (``analysis_plan.CLAIMS``): the rule of the committed plans, and the defaults
#: under ``partitioned`` (the default of new plans; with one test for both claims the two rules coincide)
RULED_PAIRS = (
    *((test, equivalence_test, "differs-and-equivalent") for test, equivalence_test in PAIRS),
    (analysis_plan.DEFAULT_TEST, analysis_plan.DEFAULT_EQUIVALENCE_TEST, analysis_plan.DEFAULT_CLAIMS),
)


def pair_key(test: str, equivalence_test: str, claims: str = "differs-and-equivalent") -> str:
    """A pair's name in the tables: ``test/equivalence test``, followed by its claims rule where it is not the old one."""
    return f"{test}/{equivalence_test}" + ("" if claims == "differs-and-equivalent" else f" {claims}")


HOPPER = Path(__file__).resolve().parent.parent / "docs" / "studies" / "hopper-half-fraction"
#: the Hopper fraction's declared margin and "did not learn" threshold (its study.json), in return units
HOPPER_MARGIN = 100.0
HOPPER_FLOOR = 100.0
#: SD of the noise added to a resampled Hopper return (a smoothed bootstrap), far below the margin
HOPPER_JITTER = 1.0
#: components whose switches decide whether Hopper learns at all in the fraction (the learning region: both on)
LEARNING_SWITCHES = ("replay_buffer", "target_networks")
#: a run with normal returns failed when its return is below this (SD units): a clean run's noise (SD 1/sqrt(2))
#: essentially never goes there, a failed run's drop of Uniform(DROP) SDs always does
NORMAL_FLOOR = -5.0
#: the learning region's rule, as the report applies it (the package's defaults, declared beside the plan)
RULES = LearningRules()


@cache
def hopper_returns() -> dict[str, object]:
    """
    The Hopper half fraction's final-window returns (the plan's primary outcome: the mean of the evaluations at or
    after 90% of training, as ``outcomes.run_outcome``), split at the failure threshold, and the failure rates of its
    cells by the two switches that decide learning.
    """
    rows = list(csv.DictReader((HOPPER / "evaluations.csv").open()))
    last = max(int(r["timesteps"]) for r in rows)
    runs: dict[tuple[str, str], list[float]] = {}
    switches: dict[str, dict[str, bool]] = {}
    for r in rows:
        if int(r["timesteps"]) >= (1 - 0.1) * last:
            runs.setdefault((r["variant"], r["seed"]), []).append(float(r["mean_return"]))
        switches[r["variant"]] = {s: r[s] == "True" for s in LEARNING_SWITCHES}
    final = {key: float(np.mean(v)) for key, v in runs.items()}
    values = np.array(list(final.values()))
    rates = {}
    for replay, target in ((True, True), (True, False), (False, True), (False, False)):
        cell = [
            x
            for (variant, _), x in final.items()
            if switches[variant] == dict(zip(LEARNING_SWITCHES, (replay, target), strict=True))
        ]
        rates[(replay, target)] = float(np.mean(np.array(cell) < HOPPER_FLOOR))
    learned, failed = values[values >= HOPPER_FLOOR], values[values < HOPPER_FLOOR]
    return {
        "learned": np.sort(learned), "failed": np.sort(failed), "rates": rates, "runs": len(values),
        "failures": len(failed),
    }  # fmt: skip


def hopper_margin_rate() -> float:
    """The variant-only failure rate whose loss of mean return equals the margin: margin / (learned - failed means)."""
    h = hopper_returns()
    return HOPPER_MARGIN / float(np.mean(h["learned"]) - np.mean(h["failed"]))


@dataclass(frozen=True)
class StudyScenario:
    """
    :param name: short label
    :param design: ``family`` (six variants against one shared TD3 arm), ``2^6`` or ``2^(6-1)`` (a factorial)
    :param returns: ``normal`` (SD units as above) or ``hopper`` (the fraction's returns, resampled)
    :param error: which verdict is an error here: ``differs`` (a null: any ``differs`` of a null comparison),
        ``equivalent`` (any ``equivalent`` of a comparison at or beyond the margin), ``both`` (a family whose last
        ``at_margin`` variants sit at the margin and the others are null: any false claim of either kind) or
        ``power`` (none: a shift)
    :param shift: the variants' shift on runs that learn (SD units or return)
    :param fail_baseline: failure rate of the TD3 arm (family) or of every cell (factorial, normal returns)
    :param fail_variant: failure rate of the variants (family)
    :param floors: factorial with Hopper returns: each cell fails at the fraction's rate for its replay buffer and
        target networks switches, and the four other components have no effect (the null components)
    :param region_effect: factorial: removing delayed_policy_update changes the return of runs that learn, in the
        learning region only (replay buffer and target networks on), by this much (the region's effect at the margin)
    """

    name: str
    design: str
    returns: str
    error: str
    shift: float = 0.0
    fail_baseline: float = 0.0
    fail_variant: float = 0.0
    floors: bool = False
    region_effect: float = 0.0
    at_margin: int = 0

    @property
    def margin(self) -> float:
        return HOPPER_MARGIN if self.returns == "hopper" else MARGIN


def study_scenarios() -> list[StudyScenario]:
    """The scenarios of the studies' shape (family, variant-only failures, Hopper's floor, null factorials)."""
    rate = hopper_returns()["rates"][(True, False)]
    at_margin = hopper_margin_rate()
    return [
        StudyScenario("shared TD3 arm, normal, null", "family", "normal", "differs"),
        StudyScenario("shared TD3 arm, normal, at the margin", "family", "normal", "equivalent", shift=-MARGIN),
        StudyScenario(f"shared TD3 arm, normal, shift {SHIFT:+.0f} SD", "family", "normal", "power", shift=SHIFT),
        StudyScenario(
            "shared TD3 arm, failures 5% variant only (mean at the margin)",
            "family",
            "normal",
            "equivalent",
            fail_variant=0.05,
        ),
        StudyScenario("shared TD3 arm, failures 20% variant only", "family", "normal", "equivalent", fail_variant=0.2),
        StudyScenario("Hopper returns, TD3-like cells, null", "family", "hopper", "differs"),
        StudyScenario(
            f"Hopper returns, floor {rate:.0%} both arms, null",
            "family",
            "hopper",
            "differs",
            fail_baseline=rate,
            fail_variant=rate,
        ),
        StudyScenario(
            f"Hopper returns, failures {at_margin:.0%} variant only (mean at the margin)",
            "family",
            "hopper",
            "equivalent",
            fail_variant=at_margin,
        ),
        StudyScenario("Hopper returns, failures 30% variant only", "family", "hopper", "equivalent", fail_variant=0.3),
        StudyScenario(
            f"Hopper returns, shift {-2 * HOPPER_MARGIN:+.0f} on runs that learn",
            "family",
            "hopper",
            "power",
            shift=-2 * HOPPER_MARGIN,
        ),
        StudyScenario("null 2^6, normal", "2^6", "normal", "differs"),
        StudyScenario("null 2^(6-1), normal", "2^(6-1)", "normal", "differs"),
        StudyScenario("null 2^(6-1), failures 20% every cell", "2^(6-1)", "normal", "differs", fail_baseline=0.2),
        StudyScenario("2^6, Hopper floors, four null components", "2^6", "hopper", "differs", floors=True),
        StudyScenario("2^(6-1), Hopper floors, four null components", "2^(6-1)", "hopper", "differs", floors=True),
        StudyScenario(
            "2^(6-1), Hopper floors, delayed_policy_update costs the margin where TD3 learns",
            "2^(6-1)",
            "hopper",
            "equivalent",
            floors=True,
            region_effect=-HOPPER_MARGIN,
        ),
        # last, so that the scenarios before it keep their random streams (seeded by position)
        StudyScenario("shared TD3 arm, normal, 3 null and 3 at the margin", "family", "normal", "both", at_margin=3),
    ]


def _runs(scenario: StudyScenario, rng: np.random.Generator, shape: tuple[int, ...], fail: float | np.ndarray) -> np.ndarray:
    """Returns of independent runs: clean noise or a learned Hopper return, or a failure where a run fails."""
    fails = rng.random(shape) < fail
    if scenario.returns == "normal":
        values = rng.standard_normal(shape) / math.sqrt(2)
        return values - fails * rng.uniform(*DROP, shape)
    h = hopper_returns()
    learned, failed = h["learned"], h["failed"]
    values = np.where(fails, rng.choice(failed, shape), rng.choice(learned, shape))
    # a smoothed bootstrap: real returns never tie, resampled ones do (and ties send Wilcoxon to scipy, row by row)
    return values + HOPPER_JITTER * rng.standard_normal(shape)


def family_runs(scenario: StudyScenario, rng: np.random.Generator, reps: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The returns of six variants, ``(reps, FAMILY, n)``, and of the one TD3 arm they share, ``(reps, 1, n)``."""
    baseline = _runs(scenario, rng, (reps, 1, n), scenario.fail_baseline)
    variants = _runs(scenario, rng, (reps, FAMILY, n), scenario.fail_variant)
    if scenario.returns == "normal":
        variants = variants + scenario.shift
        variants[:, FAMILY - scenario.at_margin :] -= scenario.margin * bool(scenario.at_margin)
    else:  # the shift acts on the runs that learn (a failed run sits at the floor whatever the component)
        variants = variants + scenario.shift * (variants >= HOPPER_FLOOR)
    return variants, baseline


def family_differences(scenario: StudyScenario, rng: np.random.Generator, reps: int, n: int) -> np.ndarray:
    """``(reps, FAMILY, n)`` per-seed differences of six variants against one TD3 arm they share."""
    variants, baseline = family_runs(scenario, rng, reps, n)
    return variants - baseline


def _design(scenario: StudyScenario) -> Design:
    return full_factorial(SWITCHES) if scenario.design == "2^6" else half_fraction(SWITCHES)


def factorial_values(scenario: StudyScenario, rng: np.random.Generator, reps: int, n: int) -> np.ndarray:
    """``(reps, cells, n)`` returns of every cell of the design on n seeds."""
    design = _design(scenario)
    shape = (reps, len(design.cells), n)
    if not scenario.floors:
        return _runs(scenario, rng, shape, scenario.fail_baseline)
    rates = hopper_returns()["rates"]
    keys = [tuple(cell[s] for s in LEARNING_SWITCHES) for cell in design.cells]
    values = _runs(scenario, rng, shape, np.array([rates[k] for k in keys])[None, :, None])
    if scenario.region_effect:
        removed = np.array([all(k) and not cell["delayed_policy_update"] for k, cell in zip(keys, design.cells, strict=True)])
        values = values + scenario.region_effect * (removed[None, :, None] & (values >= HOPPER_FLOOR))
    return values


def _family_verdicts(
    d: np.ndarray, test: str, equivalence_test: str, margin: float, check: int = 0, claims: str = "differs-and-equivalent"
) -> tuple[np.ndarray, np.ndarray]:
    """
    The verdicts of ``(reps, m, n)`` families as the report decides them (``inference.compare_family``: the plan's
    test for differs, its equivalence test for TOST, :func:`family_verdicts.decide_family` over the family).

    :param check: decide this many families with ``compare_family`` itself and require the same verdicts
    :return: ``(reps, m)`` ``differs`` and ``equivalent``
    """
    reps, m, n = d.shape
    flat = d.reshape(reps * m, n)
    p_differs = paired_tests.paired_p_values(flat, test).reshape(reps, m)
    p_equivalent = paired_tests.tost_p_value(flat, equivalence_test, margin).reshape(reps, m)
    exclusive = family_verdicts.exclusive_claims(claims, test, equivalence_test)
    differs = np.zeros((reps, m), dtype=bool)
    equivalent = np.zeros((reps, m), dtype=bool)
    for r in range(reps):
        results = [
            paired_tests.PairedResult(test, n, 0.0, 0.0, 0.0, float(a), float(b))
            for a, b in zip(p_differs[r], p_equivalent[r], strict=True)
        ]
        for j, verdict in enumerate(family_verdicts.decide_family(results, ALPHA, exclusive)):
            differs[r, j] = verdict.verdict == family_verdicts.DIFFERS
            equivalent[r, j] = verdict.verdict == family_verdicts.EQUIVALENT
    for r in range(min(check, reps)):
        names = [str(j) for j in range(m)]
        report = compare_family(dict(zip(names, d[r], strict=True)), ALPHA, margin, 0.8, 2, test, 0, equivalence_test, claims)
        verdicts = [report[name].verdict for name in names]
        expected = [DIFFERS if a else EQUIVALENT if b else UNRESOLVED for a, b in zip(differs[r], equivalent[r], strict=True)]
        if verdicts != expected:
            raise AssertionError(f"vectorised verdicts {expected} disagree with compare_family's {verdicts}")
    return differs, equivalent


def _rates(parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict[str, float]:
    """
    Error and verdict rates of families, pooled over parts (replications whose families differ, e.g. by region).

    :param parts: ``(differs, equivalent, null)``: ``(reps, m)`` verdicts and ``(m,)`` which comparisons the error
        counts (the null ones for differs, those at or beyond the margin for equivalent)
    :return: the share of families with a ``differs`` / ``equivalent`` among the ``null`` comparisons, and the share
        of comparisons called ``differs`` / ``equivalent`` among them and among the others
    """
    reps = sum(len(differs) for differs, _, _ in parts)
    counts = dict.fromkeys(("any_differs", "any_equivalent"), 0.0)
    shares: dict[str, list[np.ndarray]] = {k: [] for k in ("differs", "equivalent", "differs_others", "equivalent_others")}
    for differs, equivalent, null in parts:
        null = np.asarray(null, dtype=bool)
        counts["any_differs"] += float((differs[:, null]).any(axis=1).sum()) if null.any() else 0.0
        counts["any_equivalent"] += float((equivalent[:, null]).any(axis=1).sum()) if null.any() else 0.0
        for key, verdicts in (("differs", differs), ("equivalent", equivalent)):
            shares[key].append(verdicts[:, null].ravel())
            shares[f"{key}_others"].append(verdicts[:, ~null].ravel())
    pooled = {key: np.concatenate(values) for key, values in shares.items()}
    return {
        "any_differs": counts["any_differs"] / reps,
        "any_equivalent": counts["any_equivalent"] / reps,
        **{key: float(np.mean(values)) if len(values) else math.nan for key, values in pooled.items()},
    }


def _family_rates(
    d: np.ndarray, test: str, equivalence_test: str, margin: float, null: np.ndarray, check: int = 0, claims: str = ""
) -> dict[str, float]:
    """:func:`_rates` of the verdicts of :func:`_family_verdicts`."""
    return _rates([(*_family_verdicts(d, test, equivalence_test, margin, check, claims or "differs-and-equivalent"), null)])


def _failed(scenario: StudyScenario, values: np.ndarray) -> np.ndarray:
    """Which runs failed, from their returns alone (as the report's "did not learn" rule)."""
    return values < (HOPPER_FLOOR if scenario.returns == "hopper" else NORMAL_FLOOR)


def _regions(design: Design, failed: np.ndarray) -> list[LearningRegion]:
    """Each replication's learning region, found by the package's rule from its ``(cells, n)`` failure flags alone."""
    return [learning_region(design, flags.astype(float), RULES) for flags in failed]


def _conditional_effects(design: Design, values: np.ndarray, rows: Sequence[int]) -> tuple[list[str], np.ndarray]:
    """
    The components that vary within the region ``rows`` and their ``(reps, components, n)`` per-seed effects there:
    the mean of the region's cells with the component on minus those with it off (as
    ``learning_region.conditional_effects``).
    """
    signs = design.signs[list(rows)]
    factors = [f for j, f in enumerate(design.factors) if len(set(signs[:, j].tolist())) == 2]
    region = values[:, list(rows)]
    effects = [
        region[:, signs[:, j] > 0].mean(axis=1) - region[:, signs[:, j] < 0].mean(axis=1)
        for j in (design.factors.index(f) for f in factors)
    ]
    return factors, np.stack(effects, axis=1)


def _check_conditional(
    design: Design, values: np.ndarray, region: LearningRegion, test: str, equivalence_test: str, margin: float,
    differs: np.ndarray, equivalent: np.ndarray, claims: str,
) -> None:  # fmt: skip
    """The package's ``conditional_effects`` gives the verdicts computed here for one replication's ``(cells, n)``."""
    plan = analysis_plan.AnalysisPlan(alpha=ALPHA, test=test, equivalence_test=equivalence_test, claims=claims)
    found = conditional_effects(design, values, list(range(values.shape[1])), region, plan, margin)
    verdicts = [found.effects[f].verdict for f in found.factors]
    expected = [DIFFERS if a else EQUIVALENT if b else UNRESOLVED for a, b in zip(differs, equivalent, strict=True)]
    if verdicts != expected:
        raise AssertionError(f"conditional verdicts {expected} disagree with conditional_effects' {verdicts}")


def _failures_ruled_out(
    scenario: StudyScenario, failed: np.ndarray, baseline: np.ndarray, equivalent: np.ndarray
) -> np.ndarray:
    """
    ``(reps, m)``: where an ``equivalent`` of a leave-one-out family stands under the ``partitioned`` rule's failure
    guard (``two_part.rare_failure_guard`` as ``learning.env_learning`` applies it: the variant's failures of its n
    seeds, the baseline's mean return, the failure threshold, the comparison's share of alpha).

    :param failed: ``(reps, m, n)`` the variants' runs that failed
    :param baseline: ``(reps, 1, n)`` the shared TD3 arm's returns
    :param equivalent: ``(reps, m)`` the tests' equivalents (the guard is computed only there)
    """
    floor = HOPPER_FLOOR if scenario.returns == "hopper" else NORMAL_FLOOR
    share = ALPHA / failed.shape[1]
    stands = np.ones(equivalent.shape, dtype=bool)
    for r, j in zip(*np.nonzero(equivalent), strict=True):
        mean = float(baseline[r, 0].mean())
        stands[r, j] = rare_failure_guard(rate(failed[r, j]), mean, floor, scenario.margin, share) is None
    return stands


def evaluate_study(scenario: StudyScenario, n: int, reps: int, seed: int, index: int) -> tuple[dict, dict[str, float]]:
    """
    Every (test, equivalence test) pair's error rates in one study-shaped scenario at n seeds.

    A factorial is read as the report reads it: per-seed Yates effects, main effects one family and two-factor
    interactions another; each replication's learning region found by ``learning_region.learning_region`` from its
    failures alone, a main effect's ``equivalent`` withheld where the region is not the whole design
    (``learning_region.floor_label``), and the effects within the region (``conditional_effects``) one family.

    :return: pair ``test/equivalence`` -> family -> rates (:func:`_rates`; the families are ``variants`` (a
        leave-one-out family), or ``main`` and ``two`` (a factorial's Yates effects) and ``conditional`` (the effects
        within the learning region)); and the share of replications by the region found (its enabling components)
    """
    rng = np.random.default_rng(np.random.SeedSequence((seed, 1000 + index, n)))
    result: dict[str, dict] = {}
    if scenario.design == "family":
        variants, baseline = family_runs(scenario, rng, reps, n)
        d = variants - baseline
        # two_part.return_label withholds an equivalence where either arm has a failed run
        failures = _failed(scenario, variants).any(axis=2) | _failed(scenario, baseline).any(axis=2)
        null = np.ones(FAMILY, dtype=bool)
        null[FAMILY - scenario.at_margin :] = not scenario.at_margin
        failed_variant = _failed(scenario, variants)
        for test, equivalence_test, claims in RULED_PAIRS:
            differs, equivalent = _family_verdicts(d, test, equivalence_test, scenario.margin, 5 * (index == 0), claims)
            if claims == "partitioned":  # its report withholds an equivalence its seeds cannot guard against failures
                equivalent = equivalent & _failures_ruled_out(scenario, failed_variant, baseline, equivalent)
            rates = _rates([(differs, equivalent, null)])
            # a false claim of either kind: differs of a null comparison, equivalent of one at the margin
            rates["any_both"] = float(np.mean(differs[:, null].any(axis=1) | equivalent[:, ~null].any(axis=1)))
            rates["any_equivalent_withheld_on_failures"] = _rates([(differs, equivalent & ~failures, null)])["any_equivalent"]
            result[pair_key(test, equivalence_test, claims)] = {"variants": rates}
        return result, {}
    design = _design(scenario)
    values = factorial_values(scenario, rng, reps, n)
    words = effect_words(design.k, 2)
    # (words, seeds) per replication, as factorial.analyse_outcome computes them
    cells = values.transpose(1, 0, 2).reshape(len(design.cells), reps * n)
    effects = per_seed_effects(design, cells, words).reshape(len(words), reps, n).transpose(1, 0, 2)
    letter = {s: design.letters[design.factors.index(s)] for s in design.factors}
    active = {letter[s] for s in LEARNING_SWITCHES} if scenario.floors else set()
    null_word = np.array([not set(w) <= active if len(w) == 1 else set(w) != active for w in words])
    if scenario.region_effect:  # delayed_policy_update's main effect is not null; the error is its equivalent
        null_word = np.array([w == letter["delayed_policy_update"] for w in words])
    main = [i for i, w in enumerate(words) if len(w) == 1]
    two = [i for i, w in enumerate(words) if len(w) == 2]
    regions = _regions(design, _failed(scenario, values))
    whole = np.array([region.is_whole_design for region in regions])
    groups: dict[tuple[int, ...], list[int]] = {}
    shares: dict[str, float] = {}
    for r, region in enumerate(regions):
        groups.setdefault(region.rows, []).append(r)
        name = ", ".join(region.enabling) or "whole design"
        shares[name] = shares.get(name, 0.0) + 1 / reps

    def null_within(factor: str) -> bool:
        """Whether a component's effect within the region is null (else it is the error's subject, or not counted)."""
        if scenario.region_effect:
            return factor == "delayed_policy_update"
        return factor not in LEARNING_SWITCHES if scenario.floors else True

    conditional = {rows: _conditional_effects(design, values[members], rows) for rows, members in groups.items()}
    for test, equivalence_test, claims in RULED_PAIRS:
        margin = scenario.margin
        differs, equivalent = _family_verdicts(effects[:, main], test, equivalence_test, margin, 1, claims)
        labelled = equivalent & whole[:, None]
        _check_floor_labels(effects[:1, main], regions[:1], test, equivalence_test, margin, labelled[:1], claims)
        main_rates = _rates([(differs, labelled, null_word[main])])
        main_rates["equivalent_before_floor_rule"] = _rates([(differs, equivalent, null_word[main])])["equivalent"]
        parts = []
        for rows, members in groups.items():
            factors, contrasts = conditional[rows]
            verdicts = _family_verdicts(contrasts, test, equivalence_test, margin, 0, claims)
            r = members[0]
            _check_conditional(
                design, values[r], regions[r], test, equivalence_test, margin, verdicts[0][0], verdicts[1][0], claims
            )
            parts.append((*verdicts, np.array([null_within(f) for f in factors])))
        result[pair_key(test, equivalence_test, claims)] = {
            "main": main_rates,
            "two": _family_rates(effects[:, two], test, equivalence_test, margin, null_word[two], 1, claims),
            "conditional": _rates(parts),
        }
    return result, shares


def _check_floor_labels(
    effects: np.ndarray, regions: Sequence[LearningRegion], test: str, equivalence_test: str, margin: float,
    labelled: np.ndarray, claims: str,
) -> None:  # fmt: skip
    """The main effects' verdicts after ``floor_label`` are those counted here (``equivalent`` only in ``labelled``)."""
    for r, region in enumerate(regions):
        names = [str(j) for j in range(effects.shape[1])]
        found = compare_family(
            dict(zip(names, effects[r], strict=True)), ALPHA, margin, 0.8, 2, test, 0, equivalence_test, claims
        )
        given = [found[name].verdict == EQUIVALENT and floor_label(found[name], region) is None for name in names]
        if given != labelled[r].tolist():
            raise AssertionError(f"floor-labelled equivalents {labelled[r].tolist()} disagree with floor_label's {given}")


def study_summary(cases: Sequence[StudyScenario], results: dict, reps: int) -> dict[str, dict]:
    """
    Each pair's largest error of each kind over the study-shaped scenarios, every n and family (a main effect's
    ``equivalent`` as the report gives it: withheld where the learning region is not the whole design), and the
    verdicts it cannot give at level alpha (error above alpha + 2 Monte Carlo SE).
    """
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)
    summary = {}
    for pair in results[cases[0].name][str(STUDY_NS[0])]:
        worst = {"differs": (0.0, ""), "equivalent": (0.0, ""), "withheld": (0.0, ""), "both": (0.0, "")}
        for scenario in cases:
            if scenario.error == "power":
                continue
            for n in STUDY_NS:
                for family, rates in results[scenario.name][str(n)][pair].items():
                    rate = rates[f"any_{scenario.error}"]
                    if rate > worst[scenario.error][0]:
                        worst[scenario.error] = (rate, f"{scenario.name}, n = {n}, {family}")
                    if rate > worst["both"][0]:  # the false claims of either kind the scenario can make
                        worst["both"] = (rate, f"{scenario.name}, n = {n}, {family}")
                    if scenario.error == "equivalent":
                        rate = rates.get("any_equivalent_withheld_on_failures", rate)
                        if rate > worst["withheld"][0]:
                            worst["withheld"] = (rate, f"{scenario.name}, n = {n}, {family}")
        summary[pair] = {
            "max_false_differs": worst["differs"][0],
            "where_false_differs": worst["differs"][1],
            "max_false_equivalent": worst["equivalent"][0],
            "where_false_equivalent": worst["equivalent"][1],
            "differs_ok": worst["differs"][0] <= limit,
            "equivalent_ok": worst["equivalent"][0] <= limit,
            "max_false_equivalent_withheld_on_failures": worst["withheld"][0],
            "where_false_equivalent_withheld_on_failures": worst["withheld"][1],
            "equivalent_withheld_on_failures_ok": worst["withheld"][0] <= limit,
            "max_false_either": worst["both"][0],
            "where_false_either": worst["both"][1],
            "either_ok": worst["both"][0] <= limit,
        }
    return summary


def _with_se(value: float, reps: int, flag: bool = False) -> str:
    """A simulated rate with its Monte Carlo standard error."""
    return f"{_rate(value, flag)} ({math.sqrt(value * (1 - value) / reps):.3f})"


def _study_rows(cases: Sequence[StudyScenario], results: dict, pairs: Sequence[str], cell) -> list[str]:
    lines = ["| scenario | n | family | " + " | ".join(pairs) + " |", "|---|---|---|" + "---:|" * len(pairs)]
    for scenario in cases:
        for n in STUDY_NS:
            row = results[scenario.name][str(n)]
            for family in row[pairs[0]]:
                cells = [cell(scenario, family, row[pair][family]) for pair in pairs]
                if all(c is None for c in cells):
                    continue
                lines.append(f"| {scenario.name} | {n} | {family} | " + " | ".join(c or "" for c in cells) + " |")
    return lines


def study_markdown(report: dict) -> list[str]:
    """The section of calibration.md on the scenarios that look like the studies."""
    study = report["study_like"]
    cases = study_scenarios()
    results, reps = study["results"], study["reps"]
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)
    pairs = list(study["summary"])
    default = f"{analysis_plan.DEFAULT_TEST}/{analysis_plan.DEFAULT_EQUIVALENCE_TEST}"
    # the defaults of new plans: the default pair under the default claims rule
    ruled = pair_key(analysis_plan.DEFAULT_TEST, analysis_plan.DEFAULT_EQUIVALENCE_TEST, analysis_plan.DEFAULT_CLAIMS)
    h = hopper_returns()
    rates = h["rates"]

    def error(scenario: StudyScenario, family: str, rates: dict) -> str | None:
        if scenario.error == "power" or (scenario.region_effect and family == "two"):
            return None
        value = rates[f"any_{scenario.error}"]
        return _with_se(value, reps, value > limit)

    def withheld(scenario: StudyScenario, family: str, rates: dict) -> str | None:
        if scenario.error != "equivalent" or "any_equivalent_withheld_on_failures" not in rates:
            return None
        value = rates["any_equivalent_withheld_on_failures"]
        return _with_se(value, reps, value > limit)

    def power(scenario: StudyScenario, family: str, rates: dict) -> str | None:
        return _with_se(rates["differs"], reps) if scenario.error == "power" else None

    def equivalence_power(scenario: StudyScenario, family: str, rates: dict) -> str | None:
        return _with_se(rates["equivalent"], reps) if scenario.error == "differs" else None

    def averaged(scenario: StudyScenario, family: str, rates: dict) -> str | None:
        if not (scenario.region_effect and family == "main"):
            return None
        return f"{_rate(rates['equivalent_before_floor_rule'])} / {_rate(rates['equivalent'])}"

    found = study["regions"]
    region_rows = [
        "| scenario | n | region found (enabling components): share of replications |",
        "|---|---|---|",
        *(
            f"| {name} | {n} | " + "; ".join(f"{k or 'whole design'}: {v:.3f}" for k, v in shares.items()) + " |"
            for name, by_n in found.items()
            for n, shares in by_n.items()
        ),
    ]

    lines = [
        "## Scenarios that look like the studies",
        "",
        f"{reps} replications per cell, n = " + ", ".join(map(str, STUDY_NS)) + " seeds. Each (test, equivalence test) "
        "pair is run as a plan names it and the report decides it: per-seed differences or per-seed Yates effects "
        "(`effects.per_seed_effects`, as `factorial.analyse_outcome`) tested with `paired_tests.paired_p_values` and "
        "`paired_tests.tost_p_value`, and each family decided by `family_verdicts.decide_family` (Shaffer when one test "
        "makes both claims, Holm over the 2m hypotheses otherwise), as `inference.compare_family` does (the first "
        "families of the first scenario are also decided by `compare_family` itself, and must agree). The defaults "
        f"of new plans are **{ruled}**; the committed plans declare {default} under the rule differs-and-equivalent.",
        "",
        "- **Shared TD3 arm**: a leave-one-out family, six variants compared with one TD3 arm, so the six comparisons "
        "are correlated through the baseline. Normal returns in the SD units above (margin ±1), failures as above.",
        f"- **Hopper returns**: a run's return is drawn from the Hopper half fraction's final-window returns "
        f"(`docs/studies/hopper-half-fraction`, the mean of the evaluations from 90% of training): from its "
        f"{len(h['failed'])} runs below the plan's threshold of {HOPPER_FLOOR:.0f} (median "
        f"{np.median(h['failed']):.0f}) when the run fails, else from its {len(h['learned'])} runs that learned "
        f"(median {np.median(h['learned']):.0f}, SD {np.std(h['learned']):.0f}), plus a normal jitter of SD "
        f"{HOPPER_JITTER:g} (a smoothed bootstrap: real returns do not tie); margin ±{HOPPER_MARGIN:.0f} as "
        f"declared. The fraction's failure rates: {rates[(True, True)]:.0%} with replay buffer and target networks "
        f"on, {rates[(True, False)]:.0%} with replay on and target networks off, {rates[(False, True)]:.0%} and "
        f"{rates[(False, False)]:.0%} without replay. A variant-only failure rate of {hopper_margin_rate():.1%} costs "
        "the margin in mean return.",
        "- **Factorials**: every cell of a 2^6 or a 2^(6-1) (I = ABCDEF, as the Hopper fraction) on n seeds; main "
        "effects one family, two-factor interactions another, as the report reads them. *Hopper floors*: each cell "
        "fails at the fraction's rate for its replay buffer and target networks switches; the four other components "
        "have no effect (their main effects and every interaction but replay x target networks are null). "
        "Each replication is read as the report reads a factorial: its *learning region* is found from its failures "
        "alone by the package's rule (`learning_region.learning_region`, `region_failure_rate` "
        f"{RULES.region_failure_rate:g}: a run failed below {HOPPER_FLOOR:.0f} for Hopper returns, below "
        f"{NORMAL_FLOOR:g} SD for normal ones); a main effect's `equivalent` is withheld where the region is not the "
        "whole design (`learning_region.floor_label`: it averages over floor cells); *conditional*: each component "
        "that varies within the region, its effect there (the mean of the region's cells with it on minus off, per "
        "seed, as `learning_region.conditional_effects`), one family. The null components are the four other than "
        "replay buffer and target networks; one replication per region and pair is also decided by "
        "`conditional_effects` and `floor_label` themselves, and must agree.",
        "- Seeds are independent here: a real seed's runs share initial weights, which the paired differences cancel "
        "only in part.",
        "",
        f"### Errors (bold: above alpha + 2 SE = {limit:.4f})",
        "",
        "Nulls: the share of families with any false `differs` among the null comparisons. At or beyond the margin "
        "(variant-only failures whose mean loss reaches the margin, a shift of one margin, a region effect of one "
        "margin): the share of families with any `equivalent` among those comparisons. In brackets: the Monte Carlo "
        "SE of the rate.",
        "",
        *_study_rows(cases, results, pairs, error),
        "",
        "The same errors at or beyond the margin of a leave-one-out family, with an equivalence withheld where either "
        "arm has a failed run (`two_part.return_label`; a run failed as the learning region's rule above):",
        "",
        *_study_rows(cases, results, pairs, withheld),
        "",
        "### Power",
        "",
        "`differs` per comparison under a shift (on the runs that learn, for Hopper returns):",
        "",
        *_study_rows(cases, results, pairs, power),
        "",
        "`equivalent` per null comparison (the power of the equivalence claim):",
        "",
        *_study_rows(cases, results, pairs, equivalence_power),
        "",
        "Removing delayed_policy_update costs the margin in the learning region only: the rate at which its Yates "
        "main effect (averaged over the floor cells, about a quarter of the region's effect) is called `equivalent` "
        "by the tests / as the report gives it, withheld where the region is not the whole design. The first is "
        "right about the averaged parameter, wrong about what the component does where TD3 learns:",
        "",
        *_study_rows(cases, results, pairs, averaged),
        "",
        "The learning region each replication found (the rule sees only the failures):",
        "",
        *region_rows,
        "",
        "### Which pairs keep both errors at alpha",
        "",
        "| test / equivalence | largest false differs | where | largest false equivalent | where | "
        "... withheld where an arm has a failed run | largest false differs or equivalent, in any scenario | "
        "verdicts unavailable |",
        "|---|---:|---|---:|---|---:|---:|---|",
    ]
    for pair, s in study["summary"].items():
        lost = [v for v, ok in (("differs", s["differs_ok"]), ("equivalent", s["equivalent_ok"])) if not ok]
        if not s.get("either_ok", True) and not lost:
            lost = ["differs and equivalent together"]
        name = f"**{pair}**" if pair == ruled else pair
        withheld = s["max_false_equivalent_withheld_on_failures"]
        lines.append(
            f"| {name} | {_with_se(s['max_false_differs'], reps, not s['differs_ok'])} | {s['where_false_differs']} | "
            f"{_with_se(s['max_false_equivalent'], reps, not s['equivalent_ok'])} | {s['where_false_equivalent']} | "
            f"{_with_se(withheld, reps, not s['equivalent_withheld_on_failures_ok'])} | "
            f"{_with_se(s['max_false_either'], reps, not s['either_ok'])} | "
            f"{', '.join(f'`{v}`' for v in lost) or 'none'} |"
        )
    keep = [pair for pair, s in study["summary"].items() if s["differs_ok"] and s["equivalent_ok"]]
    lines += [
        "",
        (
            f"Pairs that keep both errors at most alpha + 2 SE in every scenario: {', '.join(keep)}."
            if keep
            else "No pair keeps both errors at most alpha + 2 SE in every scenario: the last column says which verdicts each "
            "pair cannot give at level alpha in these scenarios."
        ),
        (
            f"The defaults of new plans ({ruled}) "
            + ("do." if ruled in keep else "do not; see the last column for the verdicts they cannot give.")
        ),
        "",
        _defaults_sentence(study["summary"], ruled),
        "",
        *_unavailable_note(study, cases),
        *_partitioned_note(study, cases, default),
    ]
    return lines


def _partitioned_note(study: dict, cases: Sequence[StudyScenario], default: str) -> list[str]:
    """The defaults under the ``partitioned`` rule against the committed plans' rule, scenario by scenario."""
    ruled = f"{default} {analysis_plan.DEFAULT_CLAIMS}"
    if ruled not in study["summary"]:
        return []
    reps = study["reps"]
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)
    rows = []
    above = []
    for scenario in cases:
        if scenario.error == "power":
            continue
        for n in STUDY_NS:
            for family, rates in study["results"][scenario.name][str(n)][ruled].items():
                old = study["results"][scenario.name][str(n)][default][family][f"any_{scenario.error}"]
                new = rates[f"any_{scenario.error}"]
                if new > limit:
                    above.append(f"{scenario.name} ({family})")
                rows.append(
                    f"| {scenario.name} | {family} | {scenario.error} | {_with_se(old, reps, old > limit)} | "
                    f"{_with_se(new, reps, new > limit)} |"
                )
    hopper_cost = float(np.mean(hopper_returns()["learned"])) - HOPPER_FLOOR  # a Hopper failure costs at least this
    cost = []  # the equivalence power the failure guard costs, where it changes it
    for scenario in cases:
        if scenario.design != "family" or scenario.error != "differs":
            continue
        for n in STUDY_NS:
            old = study["results"][scenario.name][str(n)][default]["variants"]["equivalent"]
            new = study["results"][scenario.name][str(n)][ruled]["variants"]["equivalent"]
            cost.append(f"{scenario.name}: {_with_se(new, reps)} against {_with_se(old, reps)}")
    return [
        "",
        f"### The `{analysis_plan.DEFAULT_CLAIMS}` rule",
        "",
        f"New plans declare `claims: {analysis_plan.DEFAULT_CLAIMS}` by default: a comparison's two null hypotheses "
        "are disjoint, so both claims are tested at its share of alpha, and a share passes to the others once both of "
        "its comparison's hypotheses are rejected (`family_verdicts.exclusive_claims`: Shaffer's divisor whatever the "
        "tests). The table gives each scenario's family-wise error of the kind it can make (a false claim of either "
        "kind in the family with null comparisons and comparisons at the margin) for the defaults under the committed "
        f"plans' rule and under `{analysis_plan.DEFAULT_CLAIMS}` (bold: above alpha + 2 SE = {limit:.4f}). Under "
        f"`{analysis_plan.DEFAULT_CLAIMS}` an equivalence on the return of a variant against the baseline also passes "
        "a failure guard (`two_part.rare_failure_guard`, as the report applies it): at n seeds a variant that fails "
        "rarely is indistinguishable from a clean one (above), so the equivalence is given only where the exact "
        "one-sided upper bound of the variant's failure rate (Clopper-Pearson at the comparison's share of alpha) times "
        "what a failed run loses at least (the baseline's mean return minus the failure threshold) is at most the "
        'margin; elsewhere the report says "cannot tell: N seeds cannot rule out rare failures that would cost the '
        "margin; M seeds without a failure would\". A factorial effect is not guarded: its arms pool every cell's "
        "seeds, and its rows below are those of the rule alone:",
        "",
        f"| scenario | family | error | {default} (differs-and-equivalent) | {ruled} |",
        "|---|---|---|---:|---:|",
        *rows,
        "",
        (
            f"Under `{analysis_plan.DEFAULT_CLAIMS}` the error stays at most alpha + 2 SE except in "
            + "; ".join(above)
            + ": variants that fail on some seeds only, where no rule keeps `equivalent` at alpha (above), and the "
            "larger share of alpha makes that error larger. `differs` keeps its level in every scenario."
            if above
            else f"Under `{analysis_plan.DEFAULT_CLAIMS}` the error stays at most alpha + 2 SE in every scenario."
        ),
        "",
        "What the guard costs: the rate of `equivalent` per null comparison of a leave-one-out family (the power of "
        f"the equivalence claim), under `{analysis_plan.DEFAULT_CLAIMS}` with the guard against the committed rule: "
        + "; ".join(cost)
        + f". With {STUDY_NS[0]} seeds a variant gets no `equivalent` on the return where a failure costs several "
        f"margins (a clean run sits {-NORMAL_FLOOR / MARGIN:g} margins above the normal returns' failure threshold, a "
        f"Hopper run that learned {hopper_cost / HOPPER_MARGIN:.1f} margins "
        f"on average): with no failure seen, the exact bound at alpha / {FAMILY} is "
        f"{1 - (ALPHA / FAMILY) ** (1 / STUDY_NS[0]):.2f} at {STUDY_NS[0]} seeds, and a plan needs "
        f"{_seeds_without_failure(-NORMAL_FLOOR)} and {_seeds_without_failure(hopper_cost, HOPPER_MARGIN)} "
        "seeds without a failure for these two costs (the report names the number for its own). Where the baseline "
        "itself fails often (floor 65%), a failure costs less than the margin and the guard passes; the report "
        "withholds those equivalences for the failures in an arm instead (the second table above).",
    ]


def _seeds_without_failure(cost: float, margin: float = MARGIN) -> int:
    """The seeds without a failure from which ``two_part.rare_failure_guard`` gives an equivalence in a family of six."""
    n = 1
    while rare_failure_guard(rate([False] * n), cost, 0.0, margin, ALPHA / FAMILY) is not None:
        n += 1
    return n


def defaults_follow(summary: dict[str, dict], default: str) -> bool:
    """
    Whether the plan's defaults are the pair the study-shaped scenarios choose: one that keeps both errors at alpha
    where any does, else, among the pairs that keep the false ``differs`` at alpha, the smallest largest false
    ``equivalent``.
    """
    both = [pair for pair, s in summary.items() if s["differs_ok"] and s["equivalent_ok"]]
    if both:
        return default in both
    sized = [pair for pair, s in summary.items() if s["differs_ok"]]
    best = min((summary[pair]["max_false_equivalent"] for pair in sized), default=math.nan)
    return default in sized and summary[default]["max_false_equivalent"] == best


def _defaults_sentence(summary: dict[str, dict], default: str) -> str:
    sized = sorted((pair for pair, s in summary.items() if s["differs_ok"]), key=lambda p: summary[p]["max_false_equivalent"])
    if any(s["differs_ok"] and s["equivalent_ok"] for s in summary.values()):
        return f"The defaults follow from the table: {'yes' if defaults_follow(summary, default) else 'NO'}."
    order = ", ".join(f"{pair} {summary[pair]['max_false_equivalent']:.3f}" for pair in sized)
    return (
        "Where no pair keeps both, the rule falls back to the pairs that keep the false `differs` at alpha, ordered by "
        f"their largest false `equivalent`: {order or 'none'}. The defaults "
        + (
            f"({default}) are the first: they stay, and the verdict they cannot give at level alpha is named above."
            if defaults_follow(summary, default)
            else f"({default}) are NOT the first: the plan's defaults must change."
        )
    )


def _unavailable_note(study: dict, cases: Sequence[StudyScenario]) -> list[str]:
    """Why a verdict is unavailable: the scenario where the defaults' largest error sits, in numbers from the table."""
    default = f"{analysis_plan.DEFAULT_TEST}/{analysis_plan.DEFAULT_EQUIVALENCE_TEST}"
    s = study["summary"][default]
    if s["equivalent_ok"]:
        return []
    name = s["where_false_equivalent"].split(", n = ")[0]
    scenario = next(c for c in cases if c.name == name)
    n = STUDY_NS[0]
    clean = (1 - scenario.fail_variant) ** n
    null = next((c for c in cases if c.design == "family" and c.returns == scenario.returns and c.error == "differs"), None)
    power = study["results"][null.name][str(n)][default]["variants"]["equivalent"] if null else math.nan
    return [
        f"Where the committed plans' `equivalent` fails ({name}): a variant that fails on {scenario.fail_variant:.0%} of its "
        f"seeds loses the margin in mean return, yet {clean:.0%} of its samples of {n} seeds hold no failure at all, "
        "and such a sample is a draw from the baseline's own distribution. No test can tell the two apart: any test "
        "with power to call a clean variant equivalent (their defaults: "
        f"{power:.3f} per comparison in the matching null scenario) calls this one equivalent at roughly that power "
        f"times {clean:.2f}, and a family of {FAMILY} such variants has several chances. Withholding an equivalence "
        "where either arm has a failed run (`two_part.return_label`) cannot help, since the samples at fault have "
        f"none. So at n = {n} the verdict `equivalent` on the return is unavailable at level alpha for a variant that "
        "may fail rarely (a few percent of seeds); it stands only with the failure outcome beside it, whose exact "
        "interval at n seeds says how rare an unseen failure rate can be, and a report must not read it as "
        '"the component is not needed" without that interval. '
        + (
            "`differs` keeps its level in every scenario (largest false `differs` in the table above)."
            if s["differs_ok"]
            else "`differs` too exceeds its level somewhere (largest false `differs` in the table above)."
        ),
        "",
    ]


def _reusable_study(path: Path, reps: int, seed: int, designs: Sequence[str]) -> dict[str, dict]:
    """
    The study-shaped scenarios of a previous run (its calibration.json) to keep: those of the given designs, defined
    as now, at the same replications and seed (a cell is a function of those and of the code that decides it: name
    only designs whose verdicts the change since that run leaves alone).

    :return: scenario -> ``{"results": ..., "regions": ...}``
    """
    old = json.loads(path.read_text()).get("study_like", {})
    if old.get("reps") != reps or old.get("ns") != list(STUDY_NS) or json.loads(path.read_text())["seed"] != seed:
        print("the previous study-shaped scenarios ran otherwise: recomputing all", file=sys.stderr)
        return {}
    defined = {s["name"]: s for s in old["scenarios"]}
    return {
        c.name: {"results": old["results"][c.name], "regions": old["regions"].get(c.name)}
        for c in study_scenarios()
        if c.design in designs and defined.get(c.name) == asdict(c)
    }


def run_study(reps: int, seed: int, previous: dict[str, dict] | None = None) -> dict:
    """
    Simulate the study-shaped scenarios at every n and summarise each pair's errors.

    :param previous: scenario -> its kept cells (:func:`_reusable_study`), not simulated again
    """
    start = time.time()
    cases = study_scenarios()
    previous = previous or {}
    results: dict[str, dict[str, dict]] = {}
    regions: dict[str, dict[str, dict[str, float]]] = {}
    for index, scenario in enumerate(cases):
        if scenario.name in previous:
            results[scenario.name] = previous[scenario.name]["results"]
            if previous[scenario.name]["regions"]:
                regions[scenario.name] = previous[scenario.name]["regions"]
            continue
        for n in STUDY_NS:
            rates, shares = evaluate_study(scenario, n, reps, seed, index)
            results.setdefault(scenario.name, {})[str(n)] = rates
            if shares:
                regions.setdefault(scenario.name, {})[str(n)] = shares
        print(f"{scenario.name}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    h = hopper_returns()
    return {
        "reps": reps,
        "ns": list(STUDY_NS),
        "family": FAMILY,
        "pairs": [pair_key(*pair) for pair in RULED_PAIRS],
        "hopper": {
            "margin": HOPPER_MARGIN,
            "failure_threshold": HOPPER_FLOOR,
            "runs": h["runs"],
            "failures": h["failures"],
            "failure_rates": {f"replay_buffer={a}, target_networks={b}": r for (a, b), r in h["rates"].items()},
            "variant_failure_rate_at_margin": hopper_margin_rate(),
        },
        "scenarios": [asdict(s) for s in cases],
        "results": results,
        "regions": regions,
        "region_rule": RULES.to_dict(),
        "summary": study_summary(cases, results, reps),
        "reused_from_previous_run": sorted(previous),
        "runtime_s": time.time() - start,
    }


# ----------------------------------------------------------------------------------------------------------------------
# The choice
# ----------------------------------------------------------------------------------------------------------------------


def choose(cases: list[Scenario], results: dict, reps: int, trust_exact: bool = False) -> tuple[str | None, dict[str, dict]]:
    """
    The rule: among the tests whose size is at most alpha + 2 Monte Carlo SE on every null scenario at every n, the
    best power averaged over the shift-plus-failure scenarios and every n, provided it keeps at least
    1 - MAX_POWER_LOSS of the paired t-test's power under normal noise at n = REFERENCE_N.

    :param trust_exact: count the tests that are exact under these nulls (:data:`EXACT_TESTS`) as sized whatever the
        simulation says (a check that the choice does not hinge on a Monte Carlo excursion)
    :return: the chosen test (None when no test qualifies) and each test's criteria
    """
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)
    nulls = [s.name for s in cases if s.kind == "null"]
    failure = [s.name for s in cases if is_failure_power(s)]
    reference = results["shift, normal"][str(REFERENCE_N)]
    criteria = {}
    for test in paired_tests.TESTS:
        size = max(results[name][str(n)][test]["differs"] for name in nulls for n in NS)
        power = float(np.mean([results[name][str(n)][test]["differs"] for name in failure for n in NS]))
        relative = reference[test]["differs"] / reference["t"]["differs"] if reference["t"]["differs"] > 0 else math.nan
        criteria[test] = {
            "max_null_size": size,
            "size_ok": bool(size <= limit or (trust_exact and test in EXACT_TESTS)),
            "size_excess_mc_se": (size - ALPHA) / math.sqrt(ALPHA * (1 - ALPHA) / reps),
            "failure_power": power,
            "normal_power_n10": reference[test]["differs"],
            "relative_to_t": relative,
            "power_ok": bool(relative >= 1 - MAX_POWER_LOSS),
        }
    eligible = [test for test in paired_tests.TESTS if criteria[test]["size_ok"] and criteria[test]["power_ok"]]
    chosen = max(eligible, key=lambda test: criteria[test]["failure_power"]) if eligible else None
    return chosen, criteria


# ----------------------------------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------------------------------


def _reused_note(report: dict) -> str:
    reused = report.get("reused_from_previous_run", [])
    study = report.get("study_like", {}).get("reused_from_previous_run", [])
    note = (
        f"; the cells of {len(reused)} unchanged scenarios of the first sections are those of the previous run, kept "
        "with `--reuse` after one recomputed cell matched them exactly"
        if reused
        else ""
    )
    if study:
        designs = sorted({s.design for s in study_scenarios() if s.name in study})
        note += (
            f"; the {len(study)} study-shaped scenarios of the designs {', '.join(designs)} too (`--reuse-designs`: "
            "the change since that run leaves their verdicts alone)"
        )
    return note


def _rate(value: float, flag: bool = False) -> str:
    text = f"{value:.3f}"
    return f"**{text}**" if flag else text


def _table(cases: Sequence[Scenario], results: dict, key: str, ns: Sequence[int], mark=None) -> list[str]:
    lines = ["| scenario | n | " + " | ".join(paired_tests.TESTS) + " |", "|---|---|" + "---|" * len(paired_tests.TESTS)]
    for scenario in cases:
        for n in ns:
            row = results[scenario.name][str(n)]
            cells = [_rate(row[test][key], bool(mark and mark(row[test][key]))) for test in paired_tests.TESTS]
            lines.append(f"| {scenario.name} | {n} | " + " | ".join(cells) + " |")
    return lines


def markdown(report: dict, cases: list[Scenario]) -> str:
    """docs/calibration.md: method, size, power, coverage and equivalence tables, and the choice."""
    results, reps = report["results"], report["reps"]
    se = math.sqrt(ALPHA * (1 - ALPHA) / reps)
    limit = ALPHA + 2 * se
    by_kind = {kind: [s for s in cases if s.kind == kind] for kind in ("null", "power", "failures", "skewed")}
    chosen = report["chosen"]
    lines = [
        "# Calibration of the paired tests",
        "",
        f"Written by `benchmarks/inference_calibration.py` ({reps} replications per cell, seed {report['seed']}, "
        f"{report['runtime_s']:.0f} s{_reused_note(report)}); the numbers are in `docs/calibration.json`. The default test of "
        "the analysis plan (`sb3_ablation.study.plan.analysis_plan.DEFAULT_TEST`) is the one chosen here, and a unit "
        "test checks they agree.",
        "",
        "## Method",
        "",
        "Each replication draws n seeds (n = " + ", ".join(map(str, NS)) + ") of two arms, baseline and variant, and "
        "tests the per-seed differences (variant - baseline) with each candidate exactly as the report does "
        "(`paired_tests.paired_p_values`, `paired_tests.tost_p_value`, resampling seed 0: exact sign flips up to n = 16, "
        f"{paired_methods.MONTE_CARLO_FLIPS:,} random sign patterns beyond, "
        f"{paired_methods.BOOTSTRAP_REPS:,} bootstrap resamples). A "
        "seed's shared component cancels in the difference, so each arm's return is its own noise with SD 1/sqrt(2) "
        "(clean differences have SD 1, the unit of every number here): normal, t with 3 df (heavy tails), or a centred "
        "exponential (skewed returns); the variant adds the shift; an arm fails on a seed with the stated probability, "
        f"independently, and its return then drops by Uniform({DROP[0]:.0f}, {DROP[1]:.0f}) SDs (catastrophic "
        f"failure). Power scenarios shift the variant by {SHIFT:+.1f} SD. The equivalence margin is ±{MARGIN:.1f} SD. "
        f"Level alpha = {ALPHA}; Monte Carlo SE of a rate near alpha is {se:.4f}, so a size above "
        f"alpha + 2 SE = {limit:.4f} (bold) is a calibration failure.",
        "",
        "Which parameter each interval targets: the t-test, the sign-flip test of the mean and both bootstraps target "
        "the mean; Wilcoxon (Hodges-Lehmann interval) the pseudo-median, the median of (D + D')/2; the trimmed "
        "sign-flip test the 20% trimmed mean. Under the null scenarios (exchangeable arms, failures in both arms at "
        "the same rate) the differences are symmetric, so all targets are the centre and every test's H0 holds. When "
        "only the variant fails, or the effect itself is skewed, the targets differ: a variant failing in 20% of its "
        "seeds loses 4 SD in mean but much less in pseudo-median or trimmed mean. Coverage is the rate at which the "
        "test does not reject its own target, which is the interval's coverage (each interval is the set of shifts "
        "the test does not reject).",
        "",
        "## Size under the null (rejection rate of no difference, two-sided)",
        "",
        *_table(by_kind["null"], results, "differs", NS, mark=lambda v: v > limit),
        "",
        "At n = 5 the exact tests cannot reject at 0.05: their smallest two-sided p is 2/32 (Wilcoxon, sign flip) or "
        "4/32 (trimmed sign flip). Wilcoxon and the sign-flip tests are exact under these nulls (level at most alpha by "
        "construction; at n = 20 the sign flips are a fixed seeded sample of patterns, exact on average over samples), "
        "so a bold cell in their columns is a Monte Carlo excursion: with 18 null cells per test, an exact test crosses "
        "alpha + 2 SE somewhere with a probability of roughly 10% to 20%. The rule below is applied as stated all the "
        "same, and the choice is checked for dependence on it.",
        "",
        f"## Power (shift {SHIFT:+.1f} SD; rejection rate)",
        "",
        *_table(by_kind["power"], results, "differs", NS),
        "",
        "A variant that only fails more often (no shift; for the mean tests this is a real effect of "
        f"-{np.mean(DROP):.0f} SD times the failure rate):",
        "",
        *_table(by_kind["failures"], results, "differs", NS),
        "",
        "Skewed effect with mean 0 (each seed's effect is a centred lognormal with SD 1): the mean tests' rejection rate "
        "is their size for the mean; Wilcoxon and the trimmed test estimate another parameter (the pseudo-median and "
        "trimmed mean are below 0 here), so for them it is power, not size:",
        "",
        *_table(by_kind["skewed"], results, "differs", NS),
        "",
        "## Coverage of each interval's own target (nominal 0.95)",
        "",
        *_table(cases, results, "coverage", NS, mark=lambda v: v < 1 - limit),
        "",
        "Coverage of the mean (differs from the table above only for Wilcoxon and the trimmed test, where the "
        "differences are not symmetric):",
        "",
        *_table([s for s in cases if not s.symmetric], results, "coverage_of_mean", NS, mark=lambda v: v < 1 - limit),
        "",
        "Low coverage of the mean when only the variant fails is expected for every test at small n: with a 10% failure "
        "rate most samples of 5 or 10 seeds contain no failure, so no interval computed from them can reach a mean "
        "that the failures pull down by 2 SD.",
        "",
        f"## Equivalence (rate of the verdict `equivalent`, margin ±{MARGIN:.1f} SD, a family of one)",
        "",
        "A tight null (the first rows) should be called equivalent often; a variant that fails in a share of its seeds "
        "should essentially never be (its mean is 2 to 6 SD below the baseline's).",
        "",
        *_table([s for s in cases if s.kind == "null"] + by_kind["failures"], results, "equivalent", NS, mark=None),
        "",
        _equivalence_comment(report, by_kind["failures"]),
        "",
        "## The choice",
        "",
        "The rule: among the candidates whose size is at most alpha + 2 Monte Carlo SE on every null scenario at every "
        "n, choose the one with the best power averaged over the scenarios with a shift plus failures (failures in both "
        "arms and in the variant only, 10%, 20% and 30%, every n), provided it keeps at least "
        f"{1 - MAX_POWER_LOSS:.0%} of the paired t-test's power under normal noise at n = {REFERENCE_N} (else the next "
        "best).",
        "",
        "| test | largest null size | size ok | mean power with failures | power, normal, n = 10 | relative to t | power ok |",
        "|---|---|---|---|---|---|---|",
    ]
    for test, c in report["criteria"].items():
        name = f"**{test}**" if test == chosen else test
        lines.append(
            f"| {name} | {c['max_null_size']:.3f} | {'yes' if c['size_ok'] else 'no'} | {c['failure_power']:.3f} | "
            f"{c['normal_power_n10']:.3f} | {c['relative_to_t']:.2f} | {'yes' if c['power_ok'] else 'no'} |"
        )
    lines += ["", f"Chosen default: **{chosen}** ({paired_tests.TEST_NAMES[chosen]})." if chosen else "No test qualifies."]
    excursions = [t for t in EXACT_TESTS if not report["criteria"][t]["size_ok"]]
    if excursions:
        listed = ", ".join(f"{t} ({report['criteria'][t]['size_excess_mc_se']:.1f} SE above alpha)" for t in excursions)
        lines += [
            "",
            f"Exact tests excluded by a Monte Carlo excursion: {listed}. Counting them as sized, the rule would choose "
            f"**{report['chosen_trusting_exact_tests']}**.",
        ]
    lines.append("")
    lines += study_markdown(report)
    return "\n".join(lines)


def _equivalence_comment(report: dict, failures: list[Scenario]) -> str:
    results = report["results"]
    n = max(report["ns"])
    twenty = next((s for s in failures if s.fail_variant == 0.2), failures[0])
    rates = ", ".join(f"{test} {results[twenty.name][str(n)][test]['equivalent']:.3f}" for test in paired_tests.TESTS)
    sf = paired_methods._signed_rank_sf(n)
    k = n // 5
    reach = {j: float(sf[sum(range(1, n + 1 - j))]) for j in (k - 1, k)}  # P(T+ >= its largest value with j failures)
    fewer = float(stats.binom.cdf(k - 1, n, twenty.fail_variant))
    return (
        f"A variant failing in {twenty.fail_variant:.0%} of its seeds is called equivalent at n = {n} at these rates: "
        f"{rates}. The mean-based tests call it equivalent about as often as a sample happens to hold almost no failure. "
        "The pseudo-median (Wilcoxon) and the trimmed mean discount failures that are rare in the sample: at n = "
        f"{n}, Wilcoxon's one-sided test at -margin cannot reach p <= {ALPHA} with {k} failed seeds (largest T+ has "
        f"p = {reach[k]:.3f}) but can with {k - 1} (p = {reach[k - 1]:.3f}), and {fewer:.0%} of samples of {n} seeds hold "
        f"at most {k - 1} failures; the 20% trimmed mean drops up to {int(paired_methods.TRIM * n)} failed seeds "
        "entirely. A sample "
        "with a fifth of its seeds failed is never called equivalent by Wilcoxon (unit test); a variant with a 20% "
        "failure rate can be. So `equivalent` under a rank or trimmed test speaks about that parameter: it must be read "
        "with the report's failure outcome (failure rates, exact McNemar), or the equivalence claim made with a "
        "mean-based test (sign flip of the mean: exact, and as powerful as the t-test for equivalence on clean seeds "
        "from n = 10)."
    )


def _reusable(path: Path, cases: list[Scenario], reps: int, seed: int, ns: Sequence[int]) -> dict[str, dict]:
    """
    The results of a previous run (its calibration.json) for the scenarios defined as now, at the same replications,
    seed and n: each cell is a function of those, so it is taken as written, after one cell recomputed here matches it
    exactly (else nothing is reused).
    """
    old = json.loads(path.read_text())
    if old["reps"] != reps or old["seed"] != seed or old["ns"] != list(ns):
        return {}
    defined = {s["name"]: {k: v for k, v in s.items() if k != "targets"} for s in old["scenarios"]}
    same = {s.name: old["results"][s.name] for s in cases if defined.get(s.name) == asdict(s)}
    if cases[0].name not in same or evaluate(cases[0], ns[1], reps, seed, 0) != same[cases[0].name][str(ns[1])]:
        print("the previous results differ from a recomputed cell: recomputing all", file=sys.stderr)
        return {}
    return same


def run(
    reps: int, seed: int, out: Path, ns: Sequence[int] = NS, reuse: Path | None = None, study_reps: int | None = None,
    reuse_designs: Sequence[str] = (),
) -> dict:  # fmt: skip
    """
    Simulate every scenario at every n, choose the default and write calibration.md and calibration.json.

    :param reuse: a previous calibration.json whose cells for unchanged scenarios are kept (see :func:`_reusable`)
    :param study_reps: replications of the scenarios that look like the studies (default ``reps``)
    :param reuse_designs: the study-shaped scenarios of these designs are also kept from ``reuse``
        (:func:`_reusable_study`)
    """
    start = time.time()
    cases = scenarios()
    results: dict[str, dict[str, dict]] = {}
    previous = _reusable(reuse, cases, reps, seed, ns) if reuse else {}
    for index, scenario in enumerate(cases):
        if scenario.name in previous:
            results[scenario.name] = previous[scenario.name]
            continue
        results[scenario.name] = {str(n): evaluate(scenario, n, reps, seed, index) for n in ns}
        print(f"{scenario.name}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    chosen, criteria = choose(cases, results, reps)
    chosen_trusting_exact, _ = choose(cases, results, reps, trust_exact=True)
    kept = _reusable_study(reuse, study_reps or reps, seed, reuse_designs) if reuse and reuse_designs else {}
    study_like = run_study(study_reps or reps, seed, kept)
    report = {
        "alpha": ALPHA,
        "shift_sd": SHIFT,
        "margin_sd": MARGIN,
        "drop_sd": list(DROP),
        "ns": list(ns),
        "reps": reps,
        "seed": seed,
        "mc_se_at_alpha": math.sqrt(ALPHA * (1 - ALPHA) / reps),
        "tests": list(paired_tests.TESTS),
        "targets_of_tests": TARGETS,
        "scenarios": [{**asdict(s), "targets": targets(s, seed)} for s in cases],
        "results": results,
        "reused_from_previous_run": sorted(previous),
        "rule": (
            "among tests with size <= alpha + 2 MC SE on every null scenario at every n, the best power averaged over "
            f"the shift-plus-failure scenarios and every n, keeping >= {1 - MAX_POWER_LOSS:.0%} of the paired t-test's "
            f"power under normal noise at n = {REFERENCE_N}"
        ),
        "criteria": criteria,
        "chosen": chosen,
        "chosen_trusting_exact_tests": chosen_trusting_exact,
        "study_like": study_like,
        "runtime_s": time.time() - start,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps(report, indent=1) + "\n")
    page = out / "calibration.md"
    page.write_text(kept_section(page.read_text() if page.is_file() else None, markdown(report, cases)))
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None, help=f"replications per cell (default {REPS})")
    parser.add_argument("--quick", action="store_true", help=f"a smoke run: {QUICK_REPS} replications per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT, help="folder for calibration.md and calibration.json")
    parser.add_argument("--study-reps", type=int, default=None, help="replications of the study-shaped scenarios")
    parser.add_argument(
        "--reuse", type=Path, default=None, help="a previous calibration.json: keep its cells of unchanged scenarios"
    )
    parser.add_argument(
        "--reuse-designs",
        nargs="*",
        default=(),
        choices=("family", "2^6", "2^(6-1)"),
        help="with --reuse: also keep its study-shaped scenarios of these designs (only those the change leaves alone)",
    )
    args = parser.parse_args(argv)
    reps = args.reps or (QUICK_REPS if args.quick else REPS)
    report = run(reps, args.seed, args.out, reuse=args.reuse, study_reps=args.study_reps, reuse_designs=args.reuse_designs)
    print(f"chosen: {report['chosen']} ({report['runtime_s']:.0f} s)")


if __name__ == "__main__":
    main()
