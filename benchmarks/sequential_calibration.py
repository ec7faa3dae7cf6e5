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

from sb3_ablation.study.analyse.family_verdicts import DIFFERS, EQUIVALENT, exclusive_claims
from sb3_ablation.study.analyse.paired_tests import paired_p_values, tost_p_value
from sb3_ablation.study.analyse.sequential import sequential_family

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inference_calibration import (
    ALPHA,
    MARGIN,
    SHIFT,
    Scenario,
    StudyScenario,
    _failed,
    _failures_ruled_out,
    differences,
    family_runs,
    scenarios,
    study_scenarios,
)

FAMILY = 6
DESIGNS = (
    ((5, 10, 20), "obrien-fleming"),
    ((5, 10, 20), "pocock"),
    ((10, 20), "obrien-fleming"),
    ((10, 20), "pocock"),  # study_files/pendulum_sequential.yml
)
#: (test, equivalence test, claims rule): the defaults under the committed plans' rule (Holm over 2m), one test for
#: both claims (Shaffer), and the defaults under ``partitioned`` (each comparison's share for both claims), the rule of
#: new plans
OLD_RULE = "differs-and-equivalent"
PAIRS = (
    ("wilcoxon", "signflip", OLD_RULE),
    ("wilcoxon", "wilcoxon", OLD_RULE),
    ("t", "t", OLD_RULE),
    ("wilcoxon", "signflip", "partitioned"),
)
#: the pairs simulated in the scenarios that look like the studies (the plan's defaults under both rules, Wilcoxon for
#: both claims)
STUDY_PAIRS = (PAIRS[0], PAIRS[1], PAIRS[3])
REPS = 2_000
QUICK_REPS = 40
OUT = Path(__file__).resolve().parent.parent / "docs"


#: the designs of the scenarios that look like the studies (the looks of studies/pendulum_sequential.yml)
STUDY_DESIGNS = tuple(design for design in DESIGNS if design[0] == (10, 20))
#: kind of a study-shaped scenario by the verdict that is an error in it
KINDS = {"differs": "null", "equivalent": "margin", "power": "power", "both": "mixed"}


def cases() -> list[Scenario | StudyScenario]:
    """
    The nulls of the calibration, the equivalence margin (normal and t3), two shifts for power, and the families of
    the scenarios that look like the studies (six variants sharing one TD3 arm, variant-only failures, Hopper returns).
    """
    nulls = [s for s in scenarios() if s.kind == "null"]
    margin = [Scenario("at the margin, normal", "margin", shift=MARGIN), Scenario("at the margin, t3", "margin", "t3", MARGIN)]
    power = [s for s in scenarios() if s.name in ("shift, normal", "shift + failures 20% both arms")]
    study = [s for s in study_scenarios() if s.design == "family" and s.error != "power" and "20%" not in s.name]
    return nulls + margin + power + study


def simulate(
    scenario: Scenario | StudyScenario,
    looks: Sequence[int],
    boundary: str,
    test: str,
    equivalence_test: str,
    reps: int,
    seed: int,
    claims: str = OLD_RULE,
) -> dict[str, float]:
    """
    :return: the share of families with any ``differs`` and any ``equivalent``, the share of comparisons called
        ``differs``, and the mean seeds a comparison used (its stopping look, else the last); in a family whose last
        comparisons sit at the margin and the others are null, the share with a false claim of either kind
        (``any_false``)
    """
    rng = np.random.default_rng(seed)
    margin = MARGIN
    stands = np.ones((reps, FAMILY), dtype=bool)  # where an equivalence passes the report's labels
    if isinstance(scenario, StudyScenario):  # six variants against one shared TD3 arm
        variants, baseline = family_runs(scenario, rng, reps, looks[-1])
        d = (variants - baseline).reshape(reps * FAMILY, looks[-1])
        margin = scenario.margin
        if claims == "partitioned":  # the failure guard, on every seed (the equivalence is decided at the last look)
            stands = _failures_ruled_out(scenario, _failed(scenario, variants), baseline, stands)
    else:
        d = differences(scenario, rng, (reps * FAMILY, looks[-1]))
    p = np.stack([paired_p_values(d[:, :n], test) for n in looks], axis=1).reshape(reps, FAMILY, len(looks))
    tost = tost_p_value(d, equivalence_test, margin).reshape(reps, FAMILY)
    names = [f"v{i}" for i in range(FAMILY)]
    any_differs = any_equivalent = differs = seeds = any_false = 0
    at_margin = scenario.at_margin if isinstance(scenario, StudyScenario) else 0
    for r in range(reps):
        decisions = sequential_family(
            dict(zip(names, p[r], strict=True)),
            dict(zip(names, tost[r], strict=True)),
            looks,
            ALPHA,
            boundary,
            exclusive=exclusive_claims(claims, test, equivalence_test),
        )
        verdicts = [
            "withheld" if verdict == EQUIVALENT and not stands[r, j] else verdict
            for j, verdict in enumerate(decision.verdict for decision in decisions.values())
        ]
        if at_margin:
            any_false += DIFFERS in verdicts[: FAMILY - at_margin] or EQUIVALENT in verdicts[FAMILY - at_margin :]
        any_differs += DIFFERS in verdicts
        any_equivalent += EQUIVALENT in verdicts
        differs += verdicts.count(DIFFERS)
        seeds += sum(looks[d.look if d.verdict == DIFFERS else -1] for d in decisions.values())
    return {
        "any_differs": any_differs / reps,
        "any_equivalent": any_equivalent / reps,
        "differs": differs / (reps * FAMILY),
        "mean_seeds": seeds / (reps * FAMILY),
        **({"any_false": any_false / reps} if at_margin else {}),
    }


def run(reps: int, seed: int, reuse: Path | None = None, recompute: Sequence[str] = ()) -> dict:
    """
    Simulate every scenario, design and pair.

    :param reuse: a previous sequential-calibration.json: its rows (same scenario, design, pair, replications and
        seed) are kept as written, after one of them recomputed here matches exactly (else all are recomputed)
    :param recompute: claims rules whose rows of the scenarios that look like the studies are recomputed even where
        ``reuse`` has them (the rows a change since that run alters)
    """
    previous = {}
    study_names = {s.name for s in cases() if isinstance(s, StudyScenario)}
    if reuse is not None:
        old = json.loads(reuse.read_text())
        if old["reps"] == reps and old["seed"] == seed:
            previous = {
                _row_key(r): {**r, "claims": r.get("claims", OLD_RULE)}
                for r in old["results"]
                if not (r["scenario"] in study_names and r.get("claims", OLD_RULE) in recompute)
            }
    results = []
    reused = 0
    for i, scenario in enumerate(cases()):
        study = isinstance(scenario, StudyScenario)
        kind = KINDS[scenario.error] if study else scenario.kind
        for looks, boundary in STUDY_DESIGNS if study else DESIGNS:
            for test, equivalence_test, claims in STUDY_PAIRS if study else PAIRS:
                key = (scenario.name, tuple(looks), boundary, test, equivalence_test, claims)
                if key in previous:
                    results.append(previous[key])
                    reused += 1
                    continue
                rates = simulate(scenario, looks, boundary, test, equivalence_test, reps, seed + i, claims)
                results.append(
                    {
                        "scenario": scenario.name,
                        "kind": kind,
                        "looks": list(looks),
                        "boundary": boundary,
                        "test": test,
                        "equivalence_test": equivalence_test,
                        "claims": claims,
                        **rates,
                    }
                )
        print(f"{scenario.name}: done", file=sys.stderr, flush=True)
    return {
        "alpha": ALPHA,
        "family": FAMILY,
        "margin": MARGIN,
        "shift": SHIFT,
        "reps": reps,
        "seed": seed,
        "results": results,
        "reused_rows": reused,
    }


def _row_key(row: dict) -> tuple:
    return (
        row["scenario"], tuple(row["looks"]), row["boundary"], row["test"], row["equivalence_test"],
        row.get("claims", OLD_RULE),
    )  # fmt: skip


def check_reuse(path: Path, reps: int, seed: int) -> bool:
    """One previous row (the first null, its first design and pair) recomputed here matches it exactly."""
    old = json.loads(path.read_text())
    row = old["results"][0]
    scenario = cases()[0]
    if old["reps"] != reps or old["seed"] != seed or row["scenario"] != scenario.name:
        return False
    rates = simulate(
        scenario, row["looks"], row["boundary"], row["test"], row["equivalence_test"], reps, seed, row.get("claims", OLD_RULE)
    )
    return all(rates[k] == row[k] for k in rates)


def limit(reps: int) -> float:
    """The largest simulated error rate consistent with a true rate of alpha (two Monte Carlo standard errors)."""
    return ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)


def _pair(row: dict) -> tuple[str, str, str]:
    return row["test"], row["equivalence_test"], row.get("claims", OLD_RULE)


def false_claims(row: dict) -> float:
    """The share of a row's families with a false claim of either kind (``differs`` of a null comparison,
    ``equivalent`` of one at the margin); NaN under a shift."""
    return {"null": row["any_differs"], "margin": row["any_equivalent"]}.get(row["kind"], row.get("any_false", math.nan))


def worst(rows: Sequence[dict], pair: tuple[str, str, str] | None = None) -> dict[str, tuple[float, str]]:
    """
    The largest false ``differs`` (nulls), false ``equivalent`` (at the margin) and false claim of either kind (every
    scenario but the shifts), with where, of one pair or all.
    """
    result = {}
    for claim, kinds in (("differs", ("null",)), ("equivalent", ("margin",)), ("either", ("null", "margin", "mixed"))):
        chosen = [r for r in rows if r["kind"] in kinds and (pair is None or _pair(r) == pair)]
        rate = false_claims if claim == "either" else (lambda r, claim=claim: r[f"any_{claim}"])
        top = max(chosen, key=rate)
        where = f"{top['scenario']}, looks {', '.join(map(str, top['looks']))}, {top['boundary']}"
        result[claim] = (rate(top), where)
    return result


def _se(rate: float, reps: int) -> float:
    """Monte Carlo standard error of a simulated rate."""
    return math.sqrt(rate * (1 - rate) / reps)


def markdown(report: dict, seconds: float) -> str:
    reps = report["reps"]
    rows = report["results"]
    overall = worst(rows)
    worst_differs, worst_equivalent = overall["differs"][0], overall["equivalent"][0]
    ok = worst_differs <= limit(reps) and worst_equivalent <= limit(reps)
    reused = (
        f"; {report['reused_rows']} rows of unchanged scenarios kept from the previous run with `--reuse`, after one "
        "recomputed row matched exactly"
        if report.get("reused_rows")
        else ""
    )
    lines = [
        "# Calibration of the group-sequential looks",
        "",
        f"Written by `benchmarks/sequential_calibration.py` ({reps} simulated families of {report['family']} "
        f"comparisons per cell, seed {report['seed']}, {seconds:.0f} s{reused}); the numbers are in "
        "`docs/sequential-calibration.json`. Differences are in SD units; the margin is "
        f'±{report["margin"]:g}, the shift {report["shift"]:g} (the scenarios named "shared TD3 arm" and "Hopper '
        "returns\" are those of `docs/calibration.md`'s section on the studies: six variants against one shared TD3 "
        f"arm, Hopper's returns in return units with its margin of ±100, looks at 10 and 20 seeds only). "
        f"Alpha {report['alpha']:g} for the family, both claims "
        f"together; Monte Carlo limit for an error rate of alpha: {limit(reps):.3f}.",
        "",
        f"**Largest family-wise error: {worst_differs:.3f} (false differs, nulls) and {worst_equivalent:.3f} (false "
        f"equivalent, at the margin): {'within' if ok else 'ABOVE'} the limit.** Per pair (Monte Carlo SE in "
        "brackets):",
        "",
        "| test / equivalence | claims | largest false differs | where | largest false equivalent | where | largest "
        "false claim of either kind | where | verdicts unavailable |",
        "|---|---|---:|---|---:|---|---:|---|---|",
        *_pair_rows(rows, reps),
        "",
        "A verdict is unavailable where its error exceeds the limit in some scenario"
        + (
            ". Where `equivalent` is, the scenario is a variant that fails rarely (see `docs/calibration.md`, the "
            "section on the studies: a sample of seeds without a failure cannot be told from the baseline, so no test "
            "keeps that error at alpha; the `partitioned` rule's failure guard withholds such equivalences)."
            if worst_equivalent > limit(reps)
            else "; none is here."
        ),
        "",
        "| scenario | looks | boundary | test / equivalence | claims | any differs | any equivalent | any false claim "
        "| differs per comparison | mean seeds |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        false = false_claims(r)
        lines.append(
            f"| {r['scenario']} | {', '.join(map(str, r['looks']))} | {r['boundary']} | {r['test']} / "
            f"{r['equivalence_test']} | {r.get('claims', OLD_RULE)} | {r['any_differs']:.3f} | "
            f"{r['any_equivalent']:.3f} | {'—' if math.isnan(false) else f'{false:.3f}'} | {r['differs']:.3f} | "
            f"{r['mean_seeds']:.1f} |"
        )
    lines += [
        "",
        "Claims: `differs-and-equivalent` is the rule of the committed plans (Holm over the 2m hypotheses where two "
        "tests make the claims, Shaffer where one does); `partitioned`, the rule of new plans, tests both claims of a "
        "comparison at its share of alpha (their nulls are disjoint), the looks spending that share, and in the "
        "scenarios that look like the studies an equivalence passes its failure guard (`two_part.rare_failure_guard` "
        "on the variant's failures over every seed, as the report applies it). Nulls: any "
        "differs is the family-wise error. At the margin: any equivalent is. Three null and three at the margin: any "
        "false claim (a differs of a null comparison or an equivalent of one at the margin) is. Shifts: differs per "
        "comparison is the power, mean seeds what the design spent per comparison (stopping early saves seeds). A "
        "Wilcoxon look at 5 seeds cannot reject (its smallest two-sided p is 1/16), so with looks at 5 seeds the rank "
        "test gains nothing from the first look.",
        "",
    ]
    return "\n".join(lines)


def _pair_rows(rows: Sequence[dict], reps: int) -> list[str]:
    lines = []
    for pair in dict.fromkeys(_pair(r) for r in rows):
        found = worst(rows, pair)
        lost = [f"`{claim}`" for claim, (rate, _) in list(found.items())[:2] if rate > limit(reps)]
        if not lost and found["either"][0] > limit(reps):
            lost = ["`differs` and `equivalent` together"]
        cells = []
        for rate, where in found.values():
            bold = "**" if rate > limit(reps) else ""
            cells.append(f"{bold}{rate:.3f}{bold} ({_se(rate, reps):.3f}) | {where}")
        unavailable = ", ".join(lost) or "none"
        if pair not in STUDY_PAIRS:
            unavailable += " (not run on the scenarios that look like the studies)"
        lines.append(f"| {pair[0]} / {pair[1]} | {pair[2]} | " + " | ".join(cells) + f" | {unavailable} |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None, help=f"families per cell (default {REPS})")
    parser.add_argument("--quick", action="store_true", help=f"a smoke run: {QUICK_REPS} families per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT, help="folder for sequential-calibration.md and .json")
    parser.add_argument("--reuse", type=Path, default=None, help="a previous sequential-calibration.json to keep rows of")
    parser.add_argument(
        "--recompute",
        nargs="*",
        default=(),
        help="with --reuse: claims rules whose rows of the study-shaped scenarios are recomputed (e.g. partitioned)",
    )
    args = parser.parse_args(argv)
    reps = args.reps or (QUICK_REPS if args.quick else REPS)
    started = time.time()
    reuse = args.reuse if args.reuse is not None and check_reuse(args.reuse, reps, args.seed) else None
    if args.reuse is not None and reuse is None:
        print("the previous results differ from a recomputed row: recomputing all", file=sys.stderr)
    report = run(reps, args.seed, reuse, args.recompute)
    seconds = time.time() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sequential-calibration.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "sequential-calibration.md").write_text(markdown(report, seconds))
    print(f"wrote {args.out / 'sequential-calibration.md'} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
