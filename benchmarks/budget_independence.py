"""Budget independence at full scale: runs of a long study trained again to an earlier budget give, bit for bit, the
long runs' evaluations up to that budget (tests/integration/test_budget_independence.py shows it at a small scale).

Run it with the frozen worktree's Python that runs the long study (its package is the one that made the records)::

    cd /work/long-studies/hopper_paper_1m && OMP_NUM_THREADS=1 .venv/bin/python \\
        /work/main/benchmarks/budget_independence.py run --config hopper_paper_1m --budget 300000 --seed 20 \\
        --variants td3 no_delayed_policy_update --out runs/hopper_paper_1m_at_300k
    python benchmarks/budget_independence.py compare benchmarks/results/budget_independence_hopper_300k \\
        docs/studies/hopper-paper-1m --json benchmarks/results/budget_independence_hopper_1m.json

The short runs' records (seed 20, td3 and no_delayed_policy_update, 300k steps, made from the plan's commit 1657d09)
are committed in benchmarks/results/budget_independence_hopper_300k/.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sb3_ablation.study.plan.config import SeedList, StudyConfig, load_config_file
from sb3_ablation.study.run.recording import source_digest
from sb3_ablation.study.run.runner import run_study
from sb3_ablation.study.store.runs import read_run


def run(args: argparse.Namespace) -> None:
    """The study's runs of ``--seed`` and ``--variants``, trained to ``--budget`` (its plan left out: a plain study)."""
    settings = load_config_file(args.config)
    settings.pop("analysis", None)
    settings.update(n_timesteps=args.budget, seeds=SeedList([args.seed]), variants=args.variants, out=args.out, progress=False)
    config = StudyConfig(**settings)
    print(f"source digest {source_digest()}")
    print(run_study(config).summary())


def compare(args: argparse.Namespace) -> None:
    """Each short record's evaluations against the same run's in the long study, up to the short budget."""
    results = []
    for short_path in sorted(Path(args.short, "runs").rglob("seed_*.json.gz")):
        long_path = Path(args.long, short_path.relative_to(args.short))
        short, long = read_run(short_path), read_run(long_path)
        count = len(short["evaluations"]["timesteps"])
        same = {key: values == long["evaluations"][key][:count] for key, values in short["evaluations"].items()}
        results.append(
            {
                "run": str(short_path.relative_to(args.short)),
                "evaluations_compared": count,
                "steps": [short["evaluations"]["timesteps"][0], short["evaluations"]["timesteps"][-1]],
                "budgets": [short["n_timesteps"], long["n_timesteps"]],
                "source_digests": [short.get("source_digest"), long.get("source_digest")],
                "identical": same,
                "all_identical": all(same.values()),
            }
        )
        print(f"{results[-1]['run']}: {count} evaluations, identical: {results[-1]['all_identical']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "runs": results}, indent=1) + "\n")
    if not results or not all(item["all_identical"] for item in results):
        sys.exit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="train the runs to the earlier budget")
    run_parser.add_argument("--config", required=True, help="the long study's file or shipped name")
    run_parser.add_argument("--budget", type=int, required=True, help="the earlier budget, in steps")
    run_parser.add_argument("--seed", type=int, required=True)
    run_parser.add_argument("--variants", nargs="+", required=True)
    run_parser.add_argument("--out", required=True, help="the short runs' study folder")
    compare_parser = commands.add_parser("compare", help="compare the short records with the long ones")
    compare_parser.add_argument("short", help="the short runs' study folder")
    compare_parser.add_argument("long", help="the long study's folder (its runs/ subfolder holds the records)")
    compare_parser.add_argument("--json", help="write the comparison there")
    args = parser.parse_args()
    run(args) if args.command == "run" else compare(args)


if __name__ == "__main__":
    main()
