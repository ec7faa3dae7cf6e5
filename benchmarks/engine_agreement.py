"""
Do the process engine and the batched engine give the same results? Per variant, the final return (and the
overestimation bias at the end) of the same study run with each engine: IQM of each with its 95% stratified-bootstrap
CI, the IQM difference (batched - process) with its bootstrap CI, and the paired difference over seeds (the engines
share each seed's initial weights and evaluation episodes) with its Student-t interval; the report's own statistics
(sb3_ablation.study.analyse.statistics.outcome_statistics, rliable).

    sb3-ablation study --config pendulum --engine batched --out docs/studies/pendulum-batched
    python benchmarks/engine_agreement.py docs/studies/pendulum docs/studies/pendulum-batched \\
        --json benchmarks/results/engine_agreement_pendulum.json --markdown docs/studies/pendulum-batched/comparison.md
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout without installing

from sb3_ablation.study.analyse.results import load_study
from sb3_ablation.study.analyse.statistics import outcome_statistics

METRICS = {"mean_return": "final return", "overestimation": "overestimation at the end"}


def _ci(interval) -> str:
    return f"[{interval[0]:.1f}, {interval[1]:.1f}]" if interval else "—"


def compare(process_out: str, batched_out: str, reps: int) -> tuple[dict, str]:
    """The per-variant comparison as JSON-ready data and as a Markdown table per metric."""
    process, batched = load_study(process_out), load_study(batched_out)
    results: dict = {"process": process_out, "batched": batched_out, "metrics": {}}
    lines = []
    for env in process.envs:
        for metric, title in METRICS.items():
            lines += [
                f"\n### {env}: {title}\n",
                "| variant | process: IQM [95% CI] | batched: IQM [95% CI] | Δ IQM (batched - process) [95% CI] "
                "| paired Δ [95% t-interval] | interval excludes 0 |",
                "|---|---:|---:|---:|---:|:---:|",
            ]
            for variant in process.variants:
                seeds, scores = {}, {}
                for engine, data in (("process", process), ("batched", batched)):
                    seeds[engine], scores[engine] = data.final_values(env, variant, metric)
                stats = outcome_statistics(scores, baseline="process", reps=reps, seeds=seeds)
                if "batched" not in stats or "process" not in stats:
                    continue
                p, b = stats["process"], stats["batched"]
                excludes = (b.significant, b.paired_significant)
                results["metrics"].setdefault(env, {}).setdefault(metric, {})[variant] = {
                    "process": {"iqm": p.iqm, "iqm_ci": p.iqm_ci, "n": p.n_runs, "per_seed": p.per_seed},
                    "batched": {"iqm": b.iqm, "iqm_ci": b.iqm_ci, "n": b.n_runs, "per_seed": b.per_seed},
                    "diff": b.diff, "diff_ci": b.diff_ci, "paired_diff": b.paired_diff, "paired_ci": b.paired_ci,
                }  # fmt: skip
                verdict = "yes" if any(excludes) else "no"
                lines.append(
                    f"| {variant} | {p.iqm:.1f} {_ci(p.iqm_ci)} | {b.iqm:.1f} {_ci(b.iqm_ci)} | {b.diff:+.1f} "
                    f"{_ci(b.diff_ci)} | {b.paired_diff:+.1f} {_ci(b.paired_ci)} | {verdict} |"
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
            "stratified-bootstrap CI; Δ IQM with a CI from independent bootstrap resamples of both engines' runs; "
            "paired Δ = mean of the per-seed differences (same initial weights and evaluation episodes) with a "
            "Student-t interval.\n"
        )
        Path(args.markdown).write_text(header + table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
