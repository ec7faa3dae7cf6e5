"""Calibration of the group-sequential family procedure (``sb3_ablation.study.analyse.sequential``) on simulated RL
seeds: its family-wise error under the null and at the equivalence margin, and its power and seeds used under a shift.

    OMP_NUM_THREADS=1 python benchmarks/sequential_calibration.py           # writes docs/sequential-calibration.{md,json}
    OMP_NUM_THREADS=1 python benchmarks/sequential_calibration.py --quick --out /tmp/sequential

A simulated family is a leave-one-out study's: ``FAMILY`` comparisons with the baseline, each with per-seed differences
drawn as in ``benchmarks/inference_calibration.py`` (its scenarios: normal, heavy-tailed, skewed returns, 10-30%
catastrophic failures in both arms; differences in SD units). The looks' p-values come from the library's tests
(``paired_tests.paired_p_values``, ``paired_tests.tost_p_value``) on the first n seeds, and the decisions from
``sequential_family``, exactly as the report computes them. A false ``differs`` under a null, or any ``equivalent``
when every comparison sits on the margin, is a family-wise error; the procedure must keep both at or below alpha.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sb3_ablation.study.analyse.family_verdicts import DIFFERS, EQUIVALENT
from sb3_ablation.study.analyse.paired_tests import paired_p_values, tost_p_value
from sb3_ablation.study.analyse.sequential import sequential_family

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inference_calibration import ALPHA, MARGIN, SHIFT, Scenario, differences, scenarios

FAMILY = 6
DESIGNS = (
    ((5, 10, 20), "obrien-fleming"),
    ((5, 10, 20), "pocock"),
    ((10, 20), "obrien-fleming"),
    ((10, 20), "pocock"),  # study_files/pendulum_sequential.yml
)
#: (test, equivalence test): the defaults (Holm over 2m) and one test for both claims (Shaffer)
PAIRS = (("wilcoxon", "signflip"), ("wilcoxon", "wilcoxon"), ("t", "t"))
REPS = 2_000
QUICK_REPS = 40
OUT = Path(__file__).resolve().parent.parent / "docs"


def cases() -> list[Scenario]:
    """The nulls of the calibration, the equivalence margin (normal and t3), and two shifts for power."""
    nulls = [s for s in scenarios() if s.kind == "null"]
    margin = [Scenario("at the margin, normal", "margin", shift=MARGIN), Scenario("at the margin, t3", "margin", "t3", MARGIN)]
    power = [s for s in scenarios() if s.name in ("shift, normal", "shift + failures 20% both arms")]
    return nulls + margin + power


def simulate(
    scenario: Scenario, looks: Sequence[int], boundary: str, test: str, equivalence_test: str, reps: int, seed: int
) -> dict[str, float]:
    """
    :return: the share of families with any ``differs`` and any ``equivalent``, the share of comparisons called
        ``differs``, and the mean seeds a comparison used (its stopping look, else the last)
    """
    rng = np.random.default_rng(seed)
    d = differences(scenario, rng, (reps * FAMILY, looks[-1]))
    p = np.stack([paired_p_values(d[:, :n], test) for n in looks], axis=1).reshape(reps, FAMILY, len(looks))
    tost = tost_p_value(d, equivalence_test, MARGIN).reshape(reps, FAMILY)
    names = [f"v{i}" for i in range(FAMILY)]
    any_differs = any_equivalent = differs = seeds = 0
    for r in range(reps):
        decisions = sequential_family(
            dict(zip(names, p[r], strict=True)),
            dict(zip(names, tost[r], strict=True)),
            looks,
            ALPHA,
            boundary,
            exclusive=test == equivalence_test,
        )
        verdicts = [decision.verdict for decision in decisions.values()]
        any_differs += DIFFERS in verdicts
        any_equivalent += EQUIVALENT in verdicts
        differs += verdicts.count(DIFFERS)
        seeds += sum(looks[d.look if d.verdict == DIFFERS else -1] for d in decisions.values())
    return {
        "any_differs": any_differs / reps,
        "any_equivalent": any_equivalent / reps,
        "differs": differs / (reps * FAMILY),
        "mean_seeds": seeds / (reps * FAMILY),
    }


def run(reps: int, seed: int) -> dict:
    results = []
    for i, scenario in enumerate(cases()):
        for looks, boundary in DESIGNS:
            for test, equivalence_test in PAIRS:
                rates = simulate(scenario, looks, boundary, test, equivalence_test, reps, seed + i)
                results.append(
                    {
                        "scenario": scenario.name,
                        "kind": scenario.kind,
                        "looks": list(looks),
                        "boundary": boundary,
                        "test": test,
                        "equivalence_test": equivalence_test,
                        **rates,
                    }
                )
    return {"alpha": ALPHA, "family": FAMILY, "margin": MARGIN, "shift": SHIFT, "reps": reps, "seed": seed, "results": results}


def limit(reps: int) -> float:
    """The largest simulated error rate consistent with a true rate of alpha (two Monte Carlo standard errors)."""
    return ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)


def markdown(report: dict, seconds: float) -> str:
    reps = report["reps"]
    rows = report["results"]
    worst_differs = max(r["any_differs"] for r in rows if r["kind"] == "null")
    worst_equivalent = max(r["any_equivalent"] for r in rows if r["kind"] == "margin")
    ok = worst_differs <= limit(reps) and worst_equivalent <= limit(reps)
    lines = [
        "# Calibration of the group-sequential looks",
        "",
        f"Written by `benchmarks/sequential_calibration.py` ({reps} simulated families of {report['family']} "
        f"comparisons per cell, seed {report['seed']}, {seconds:.0f} s); the numbers are in "
        "`docs/sequential-calibration.json`. Differences are in SD units; the margin is "
        f"±{report['margin']:g}, the shift {report['shift']:g}. Alpha {report['alpha']:g} for the family, both claims "
        f"together; Monte Carlo limit for an error rate of alpha: {limit(reps):.3f}.",
        "",
        f"**Largest family-wise error: {worst_differs:.3f} (false differs, nulls) and {worst_equivalent:.3f} (false "
        f"equivalent, at the margin): {'within' if ok else 'ABOVE'} the limit.**",
        "",
        "| scenario | looks | boundary | test / equivalence | any differs | any equivalent | differs per comparison | "
        "mean seeds |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['scenario']} | {', '.join(map(str, r['looks']))} | {r['boundary']} | {r['test']} / "
            f"{r['equivalence_test']} | {r['any_differs']:.3f} | {r['any_equivalent']:.3f} | {r['differs']:.3f} | "
            f"{r['mean_seeds']:.1f} |"
        )
    lines += [
        "",
        "Nulls: any differs is the family-wise error. At the margin: any equivalent is. Shifts: differs per comparison "
        "is the power, mean seeds what the design spent per comparison (stopping early saves seeds). A Wilcoxon look "
        "at 5 seeds cannot reject (its smallest two-sided p is 1/16), so with looks at 5 seeds the rank test gains "
        "nothing from the first look.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None, help=f"families per cell (default {REPS})")
    parser.add_argument("--quick", action="store_true", help=f"a smoke run: {QUICK_REPS} families per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT, help="folder for sequential-calibration.md and .json")
    args = parser.parse_args(argv)
    reps = args.reps or (QUICK_REPS if args.quick else REPS)
    started = time.time()
    report = run(reps, args.seed)
    seconds = time.time() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sequential-calibration.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "sequential-calibration.md").write_text(markdown(report, seconds))
    print(f"wrote {args.out / 'sequential-calibration.md'} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
