"""Calibration of the simultaneous bands of effects along training (``sb3_ablation.study.analyse.along_training``):
under the null the simultaneous 95% band must miss 0 somewhere in at most 5% of studies; where an effect starts
midway, no step before it may be named more often than that, and the band should cover the true difference curve.

    OMP_NUM_THREADS=1 python benchmarks/along_training_calibration.py          # docs/calibration.md's section, and
                                                                                # docs/along-training-calibration.json
    OMP_NUM_THREADS=1 python benchmarks/along_training_calibration.py --quick --out /tmp/along

Each replication builds n = 10 per-seed difference curves (variant - baseline, one value per evaluation step) and
computes the bands exactly as the report does (``sign_flip_bands``: every sign pattern at 10 seeds). The curves are
the committed studies' own, so their autocorrelation, spread that grows with training and collapses are real:

- TD3 against TD3: the 20 TD3 runs of a committed study (Hopper-v5 at 300k steps, 61 evaluations; Pendulum-v1 at 20k,
  21 evaluations), shuffled into 10 pairs in random order: two exchangeable arms, the paired design's null.
- a committed comparison with its seeds' signs flipped at random: 10 of hopper-paper-300k's 20 per-seed difference
  curves of a variant against TD3, each multiplied by a random sign (symmetric about 0 whatever the real effect).
- simulated skewed curves (AR(1), coefficient 0.9, 41 evaluations), mean 0 but not symmetric, where sign flips are
  not exact: the difference of an arm with centred exponential steps and one with normal steps of the same SD (arms of
  the same mean and spread, different shapes), and differences with centred exponential steps themselves.
- an effect that starts midway: TD3 against TD3 on Hopper plus a shift of 1.5 SDs of a two-run difference (per
  step) from 150,000 steps on: how often a step before it is named (must stay at 5% at most), how often the band
  excludes 0 after it, and how often the band covers the true difference curve at every step.

Writes ``docs/along-training-calibration.json`` and the section between the markers of ``docs/calibration.md``
(``benchmarks/inference_calibration.py`` keeps that section when it rewrites the page).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sb3_ablation.study.analyse.along_training import ALONG_ALPHA, sign_flip_bands
from sb3_ablation.study.analyse.paired_tests import paired_p_values
from sb3_ablation.study.plan.analysis_plan import DEFAULT_TEST

ROOT = Path(__file__).resolve().parent.parent
STUDIES = ROOT / "docs" / "studies"
OUT = ROOT / "docs"
N = 10
REPS = 2_000
QUICK_REPS = 20
#: the shift of the effect that starts midway, in SDs of a two-run difference at each step
SHIFT_SDS = 1.5
#: where that effect starts (Hopper-v5 at 300k steps)
SHIFT_START = 150_000
#: the report's tests at one step, beside the band: the plan's default (its primary test) and the sign-flip test of
#: the mean (the band's own statistic at one step)
ONE_STEP_TESTS = (DEFAULT_TEST, "signflip")
#: the section of calibration.md this script writes
START, END = "<!-- along-training:start -->", "<!-- along-training:end -->"


def evaluation_curves(study: str, variant: str) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """A committed study's evaluation returns of one variant: the steps and seed -> its curve (its evaluations.csv)."""
    rows = [r for r in csv.DictReader((STUDIES / study / "evaluations.csv").open()) if r["variant"] == variant]
    steps = np.array(sorted({int(r["timesteps"]) for r in rows}))
    curves: dict[int, dict[int, float]] = {}
    for r in rows:
        curves.setdefault(int(r["seed"]), {})[int(r["timesteps"])] = float(r["mean_return"])
    return steps, {seed: np.array([by_step[t] for t in steps]) for seed, by_step in sorted(curves.items())}


def td3_pairs(study: str) -> tuple[np.ndarray, Callable[[np.random.Generator], np.ndarray]]:
    """The steps and a draw of N difference curves of TD3 runs shuffled into pairs (2N distinct runs of the study)."""
    steps, curves = evaluation_curves(study, "td3")
    runs = np.array(list(curves.values()))

    def draw(rng: np.random.Generator) -> np.ndarray:
        chosen = runs[rng.permutation(len(runs))[: 2 * N]]
        return chosen[:N] - chosen[N:]

    return steps, draw


def flipped_comparison(study: str, variant: str) -> tuple[np.ndarray, Callable[[np.random.Generator], np.ndarray]]:
    """The steps and a draw of N of a committed comparison's per-seed difference curves, each with a random sign."""
    steps, curves = evaluation_curves(study, variant)
    _, baseline = evaluation_curves(study, "td3")
    d = np.array([curves[seed] - baseline[seed] for seed in curves if seed in baseline])

    def draw(rng: np.random.Generator) -> np.ndarray:
        return d[rng.permutation(len(d))[:N]] * rng.choice((1.0, -1.0), (N, 1))

    return steps, draw


def _ar1(innovations: np.ndarray, phi: float) -> np.ndarray:
    curves = np.empty_like(innovations)
    curves[:, 0] = innovations[:, 0]
    for t in range(1, innovations.shape[1]):
        curves[:, t] = phi * curves[:, t - 1] + innovations[:, t]
    return curves


def skewed_curves(
    one_arm: bool, evaluations: int = 41, phi: float = 0.9
) -> tuple[np.ndarray, Callable[[np.random.Generator], np.ndarray]]:
    """
    The steps and a draw of N AR(1) difference curves of mean 0 that are not symmetric: with centred exponential
    innovations (``one_arm=False``: the differences themselves skewed, skewness 2 at the first step), or the difference
    of an arm with such innovations and one with normal innovations of the same SD (``one_arm=True``: two arms of the
    same mean and spread but different shapes, skewness 0.7 at the first step).
    """
    steps = np.arange(evaluations) * 5_000

    def draw(rng: np.random.Generator) -> np.ndarray:
        skewed = _ar1(rng.exponential(1.0, (N, evaluations)) - 1.0, phi)
        if not one_arm:
            return skewed
        return skewed - _ar1(rng.normal(0.0, 1.0, (N, evaluations)), phi)

    return steps, draw


@dataclass(frozen=True)
class Scenario:
    """
    :param name: what the curves are
    :param make: builds the steps and the draw of one replication's difference curves
    :param truth: the true mean difference per step, given the steps (``None``: 0 everywhere, a null)
    """

    name: str
    make: Callable[[], tuple[np.ndarray, Callable[[np.random.Generator], np.ndarray]]]
    truth: Callable[[np.ndarray], np.ndarray] | None = None


def _hopper_shift(steps: np.ndarray) -> np.ndarray:
    _, curves = evaluation_curves("hopper-paper-300k", "td3")
    sd = np.std(np.array(list(curves.values())), axis=0, ddof=1) * math.sqrt(2)
    return np.where(steps >= SHIFT_START, SHIFT_SDS * sd, 0.0)


def _shifted(make: Callable[[], tuple[np.ndarray, Callable]], truth: Callable[[np.ndarray], np.ndarray]) -> Callable:
    def built() -> tuple[np.ndarray, Callable[[np.random.Generator], np.ndarray]]:
        steps, draw = make()
        shift = truth(steps)
        return steps, lambda rng: draw(rng) + shift

    return built


#: the scenario whose differences are skewed themselves (mean 0)
SKEWED = "simulated: skewed differences, mean 0 (AR(1))"


def scenarios() -> list[Scenario]:
    hopper = lambda: td3_pairs("hopper-paper-300k")  # noqa: E731
    return [
        Scenario("Hopper-v5 300k: TD3 against TD3 (20 runs paired at random)", hopper),
        Scenario("Pendulum-v1 20k: TD3 against TD3 (pendulum-sequential's 20 runs)", lambda: td3_pairs("pendulum-sequential")),
        *[
            Scenario(
                f"Hopper-v5 300k: {variant} - td3, seeds' signs flipped at random",
                lambda variant=variant: flipped_comparison("hopper-paper-300k", variant),
            )
            for variant in ("no_delayed_policy_update", "no_target_policy_smoothing", "no_clipped_double_q")
        ],
        Scenario("simulated: one arm skewed, the other normal, same mean and SD (AR(1))", lambda: skewed_curves(one_arm=True)),
        Scenario(SKEWED, lambda: skewed_curves(one_arm=False)),
        Scenario(
            f"Hopper-v5 300k: TD3 against TD3 plus {SHIFT_SDS} SDs from {SHIFT_START:,} steps",
            _shifted(hopper, _hopper_shift),
            _hopper_shift,
        ),
    ]


def evaluate(scenario: Scenario, reps: int, seed: int) -> dict[str, float]:
    """
    Rates over replications: the band misses 0 somewhere (``misses_0``); it names a step where the truth is 0
    (``names_a_null_step``); it excludes 0 at a step with an effect (``detects``); it covers the true curve at every
    step (``covers``); and each of :data:`ONE_STEP_TESTS` rejects "no difference" at alpha at the first and at the last
    step alone (``{test}_first``, ``{test}_last``: ``paired_tests.paired_p_values``, two-sided, as the report's primary
    test at the budget).
    """
    steps, draw = scenario.make()
    truth = scenario.truth(steps) if scenario.truth is not None else np.zeros(len(steps))
    null = truth == 0
    rng = np.random.default_rng(seed)
    counts = {"misses_0": 0, "names_a_null_step": 0, "detects": 0, "covers": 0}
    ends = []
    for _ in range(reps):
        curves = draw(rng)
        ends.append(curves[:, [0, -1]])
        bands = sign_flip_bands(curves, ALONG_ALPHA)
        excluded = bands.excluded() != 0
        low, high = bands.simultaneous
        counts["misses_0"] += bool(excluded.any())
        counts["names_a_null_step"] += bool(excluded[null].any())
        counts["detects"] += bool(excluded[~null].any())
        counts["covers"] += bool(np.all((low <= truth) & (truth <= high)))
    rates = {key: value / reps for key, value in counts.items()}
    first, last = np.stack(ends).transpose(2, 0, 1)  # (reps, seeds) each
    for test in ONE_STEP_TESTS:
        for name, values in (("first", first), ("last", last)):
            rates[f"{test}_{name}"] = float(np.mean(paired_p_values(values, test) <= ALONG_ALPHA))
    return {**rates, "steps": len(steps), "null_steps": int(null.sum())}


def _se(rate: float, reps: int) -> float:
    return math.sqrt(max(rate * (1 - rate), ALONG_ALPHA * (1 - ALONG_ALPHA)) / reps)


def section(report: dict) -> str:
    """The section of docs/calibration.md, between its markers."""
    reps = report["reps"]
    limit = ALONG_ALPHA + 2 * math.sqrt(ALONG_ALPHA * (1 - ALONG_ALPHA) / reps)
    lines = [
        START,
        "## Effects along training: the simultaneous band",
        "",
        f"Written by `benchmarks/along_training_calibration.py` ({reps} replications per row, seed {report['seed']}, "
        f"{report['runtime_s']:.0f} s); the numbers are in `docs/along-training-calibration.json`. Each replication "
        f"takes n = {N} per-seed difference curves and computes the report's bands (`along_training.sign_flip_bands`: "
        "studentized max-t over the evaluation steps, every sign pattern of whole curves). Curves: the committed "
        "studies' own evaluation returns (TD3 runs shuffled into pairs; or a committed comparison's per-seed "
        "difference curves, each with a random sign), and simulated skewed curves (AR(1), coefficient 0.9, 41 "
        "evaluations; mean 0 but not symmetric, where sign flips are not exact: one arm with centred exponential steps "
        "against one with normal steps of the same SD, or differences with centred exponential steps, skewness 2 at "
        "the first step). A rate's Monte Carlo SE is "
        f"shown beside it (at least that of a rate of {ALONG_ALPHA}); a null row above alpha + 2 SE = {limit:.4f} "
        "would be a calibration failure (bold).",
        "",
        "| scenario | evaluation steps | false: the band excludes 0 at a step where the true difference is 0 (MC SE) "
        "| the band excludes 0 at a step with the effect | the band covers the true curve at every step (MC SE) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in report["results"].items():
        false = f"{row['names_a_null_step']:.3f} ({_se(row['names_a_null_step'], reps):.3f})"
        if row["names_a_null_step"] > limit:
            false = f"**{false}**"
        detects = "— (a null)" if row["null_steps"] == row["steps"] else f"{row['detects']:.3f}"
        covers = f"{row['covers']:.3f} ({_se(row['covers'], reps):.3f})"
        lines.append(f"| {name} | {row['steps']} | {false} | {detects} | {covers} |")
    lines += [
        "",
        "Under a null (every row but the last) the false rate is the rate at which the band misses 0 somewhere: at "
        "most alpha, exactly so where the "
        "differences are symmetric (two exchangeable arms, or random signs), by construction of the max-t sign-flip "
        "test. The simulated skewed curves show how far a mean-0 but asymmetric null strays: sign flips assume that "
        "the differences are symmetric where the means are equal, which two arms of one distribution guarantee and "
        "arms of different shapes do not: the band stays at alpha for arms that differ in shape alone, and strongly "
        "skewed differences with 10 seeds make it liberal. Where an effect "
        f"starts at {SHIFT_START:,} steps, a step before it is named at most at alpha too (the maximum over every step "
        "is at least the maximum over the steps without an effect), and the last columns give how often the band "
        "finds the effect and covers the true curve (0 before the start, the shift after) at every step at once.",
        "",
        *_one_step_section(report),
        END,
    ]
    return "\n".join(lines) + "\n"


def _one_step_section(report: dict) -> list[str]:
    """The report's own tests at one step on the same curves, and what they say of the skewed row."""
    reps = report["reps"]
    names = " | ".join(f"{test}, {end} step" for test in ONE_STEP_TESTS for end in ("first", "last"))
    lines = [
        "The report's own tests on the same curves, at one step alone (the first and the last evaluation; rate of a "
        f"two-sided p <= {ALONG_ALPHA:g} by `paired_tests.paired_p_values`: {ONE_STEP_TESTS[0]}, the plan's primary "
        "test at the budget, and signflip, the test of the mean whose statistic the band takes at each step):",
        "",
        f"| scenario | {names} |",
        "|---|" + "---:|" * 2 * len(ONE_STEP_TESTS),
    ]
    for name, row in report["results"].items():
        if row["null_steps"] == row["steps"]:
            cells = " | ".join(f"{row[f'{test}_{end}']:.3f}" for test in ONE_STEP_TESTS for end in ("first", "last"))
            lines.append(f"| {name} | {cells} |")
    skewed = report["results"].get(SKEWED)
    if skewed is None:
        return lines
    lines += [
        "",
        f"On the skewed differences a test of the mean at the first step alone (skewness 2) rejects at "
        f"{skewed['signflip_first']:.3f}, at the last (skewness about 0.6 after the AR(1) averaging) at "
        f"{skewed['signflip_last']:.3f}; the {ONE_STEP_TESTS[0]} test at {skewed[f'{ONE_STEP_TESTS[0]}_first']:.3f} "
        f"and {skewed[f'{ONE_STEP_TESTS[0]}_last']:.3f}. **"
        + (
            f"The band's {skewed['names_a_null_step']:.3f} ({_se(skewed['names_a_null_step'], reps):.3f}) over "
            f"{skewed['steps']} steps is no more than one test of the mean at the most skewed step "
            f"({skewed['signflip_first']:.3f} ({_se(skewed['signflip_first'], reps):.3f})): with {N} seeds, every test "
            "of a mean on differences this skewed is liberal, and the band inherits that without adding to it.** "
            if skewed["names_a_null_step"] <= skewed["signflip_first"] + 2 * _se(skewed["signflip_first"], reps)
            else f"The band's {skewed['names_a_null_step']:.3f} over {skewed['steps']} steps is above one test of the "
            "mean at the most skewed step: the maximum over the steps adds to what skew does to one test.** "
        )
        + 'Such differences cannot come from two exchangeable arms (the report\'s "no difference", under which each '
        "seed's difference is symmetric about 0 and the band is exact, the first rows): they need arms whose "
        "distributions differ, so a step the band names there has arms that differ, though not in mean.",
    ]
    return lines


def with_section(page: str, block: str) -> str:
    """``page`` with its section between the markers replaced by ``block`` (appended where it has none)."""
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)
    if pattern.search(page):
        return pattern.sub(lambda _: block, page)
    return page.rstrip("\n") + "\n\n" + block


def kept_section(old_page: str | None, new_page: str) -> str:
    """A regenerated calibration.md with the section this script wrote into the old one (none: unchanged)."""
    if old_page is None:
        return new_page
    found = re.search(re.escape(START) + r".*?" + re.escape(END) + r"\n?", old_page, re.DOTALL)
    return with_section(new_page, found.group(0)) if found else new_page


def run(reps: int, seed: int, out: Path) -> dict:
    start = time.time()
    results = {}
    for index, scenario in enumerate(scenarios()):
        results[scenario.name] = evaluate(scenario, reps, seed + index)
        print(f"{scenario.name}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    report = {"alpha": ALONG_ALPHA, "n": N, "reps": reps, "seed": seed, "results": results}
    report["runtime_s"] = time.time() - start
    out.mkdir(parents=True, exist_ok=True)
    (out / "along-training-calibration.json").write_text(json.dumps(report, indent=1) + "\n")
    page = out / "calibration.md"
    page.write_text(with_section(page.read_text() if page.is_file() else "# Calibration\n", section(report)))
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None, help=f"replications per scenario (default {REPS})")
    parser.add_argument("--quick", action="store_true", help=f"a smoke run: {QUICK_REPS} replications")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT, help="folder of calibration.md")
    args = parser.parse_args(argv)
    report = run(args.reps or (QUICK_REPS if args.quick else REPS), args.seed, args.out)
    print(f"{report['runtime_s']:.0f} s")


if __name__ == "__main__":
    main()
