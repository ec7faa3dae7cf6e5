"""
Do the process engine and the batched engine give the same results? Per variant, the final return (and the
overestimation bias at the end) of the same study run with each engine: the IQM of each with its 95%
stratified-bootstrap CI (effect sizes), and the verdict on the per-seed differences batched - process (the engines
share each seed's initial weights and evaluation episodes) decided as the report decides its own: the report's
``compare_family`` under the process study's analysis plan (its paired test, the equivalence test within the study's
margin of the return, one family-wise alpha over the variants of each env and metric).

    sb3-ablation study --config pendulum --engine batched --out docs/studies/pendulum-batched
    python benchmarks/engine_agreement.py docs/studies/pendulum docs/studies/pendulum-batched \\
        --json benchmarks/results/engine_agreement_pendulum.json --markdown docs/studies/pendulum-batched/comparison.md
"""

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout without installing

from sb3_ablation.study.analyse.inference import compare_family
from sb3_ablation.study.analyse.outcomes import study_references
from sb3_ablation.study.analyse.results import StudyData, load_study
from sb3_ablation.study.analyse.statistics import MIN_RUNS, outcome_statistics
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, env_margin
from sb3_ablation.study.render.format import fmt_ci, fmt_p
from sb3_ablation.study.render.json_parts import comparison_json

METRICS = {"mean_return": "final return", "overestimation": "overestimation at the end"}


def _ci(interval) -> str:
    return f"[{interval[0]:.1f}, {interval[1]:.1f}]" if interval else "—"


def _plan(data: StudyData) -> AnalysisPlan:
    """The study's declared analysis plan (the defaults where it declared none)."""
    declared = data.manifest.get("analysis")
    return AnalysisPlan.from_dict(declared) if declared is not None else AnalysisPlan()


def _margin(data: StudyData, env: str, metric: str, plan: AnalysisPlan) -> float:
    """The report's equivalence margin of the return on ``env``; none (NaN) for the overestimation."""
    if metric != "mean_return":
        return math.nan
    margin, _ = env_margin(plan, study_references(data, env))
    return math.nan if margin is None else float(margin)


def compare(process_out: str, batched_out: str, reps: int) -> tuple[dict, str]:
    """The per-variant comparison as JSON-ready data and as a Markdown table per metric."""
    process, batched = load_study(process_out), load_study(batched_out)
    plan = _plan(process)
    results: dict = {"process": process_out, "batched": batched_out, "plan": plan.to_dict(), "metrics": {}}
    lines = []
    for env in process.envs:
        for metric, title in METRICS.items():
            margin = _margin(process, env, metric, plan)
            estimates, differences = {}, {}
            for variant in process.variants:
                seeds, scores = {}, {}
                for engine, data in (("process", process), ("batched", batched)):
                    seeds[engine], scores[engine] = data.final_values(env, variant, metric)
                stats = outcome_statistics(scores, baseline="process", reps=reps, seeds=seeds)
                if "batched" not in stats or "process" not in stats:
                    continue
                estimates[variant] = stats
                differences[variant] = list(stats["batched"].paired_diffs)
            comparisons = compare_family(
                differences, plan.alpha, margin, plan.power, MIN_RUNS, plan.test, 0, plan.equivalence_test
            )
            margin_text = f"±{margin:,.1f}" if math.isfinite(margin) else "none"
            lines += [
                f"\n### {env}: {title}\n",
                f"Verdicts on batched - process per seed: {next(iter(comparisons.values())).test if comparisons else '—'}; "
                f"equivalence margin {margin_text}.\n",
                "| variant | process: IQM [95% CI] | batched: IQM [95% CI] | Δ (batched - process) [95% CI] (n) "
                "| p (adjusted) | p equivalence (adjusted) | verdict |",
                "|---|---:|---:|---:|---:|---:|:---|",
            ]
            for variant, stats in estimates.items():
                p, b, c = stats["process"], stats["batched"], comparisons[variant]
                results["metrics"].setdefault(env, {}).setdefault(metric, {})[variant] = {
                    "process": {"iqm": p.iqm, "iqm_ci": p.iqm_ci, "n": p.n_runs, "per_seed": p.per_seed},
                    "batched": {"iqm": b.iqm, "iqm_ci": b.iqm_ci, "n": b.n_runs, "per_seed": b.per_seed},
                    "comparison": comparison_json(c),
                }  # fmt: skip
                verdict = c.verdict + (f" ({c.reason})" if c.reason else "")
                lines.append(
                    f"| {variant} | {p.iqm:.1f} {_ci(p.iqm_ci)} | {b.iqm:.1f} {_ci(b.iqm_ci)} | {c.effect:+.1f} "
                    f"{fmt_ci(c.ci)} ({c.n}) | {fmt_p(c.p_raw)} ({fmt_p(c.p_adjusted)}) | "
                    f"{fmt_p(c.p_equivalence)} ({fmt_p(c.p_equivalence_adjusted)}) | {verdict} |"
                )
    return results, "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("process", help="the study folder of the process engine")
    parser.add_argument("batched", help="the same study's folder with the batched engine")
    parser.add_argument("--reps", type=int, default=10_000, help="bootstrap resamples (default 10000)")
    parser.add_argument("--json", help="write the comparison to this JSON file")
    parser.add_argument("--markdown", help="write the tables to this Markdown file")
    args = parser.parse_args()
    results, table = compare(args.process, args.batched, args.reps)
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    if args.markdown:
        header = (
            f"# Process engine vs batched engine\n\n`{args.process}` (one run per process) against `{args.batched}` "
            "(the seeds of a variant in one process), the same study settings.\n\n`python benchmarks/engine_agreement.py "
            f"{args.process} {args.batched}`. Final values = the last evaluation; IQM over seeds with rliable's "
            "stratified-bootstrap CI; Δ = the per-seed differences batched - process (same initial weights and "
            "evaluation episodes), decided as the report decides: its paired test and equivalence test under the "
            "study's plan, one family-wise alpha over the variants of each table.\n"
        )
        Path(args.markdown).write_text(header + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
