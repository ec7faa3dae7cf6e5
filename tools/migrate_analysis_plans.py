"""One-off: give the committed studies the analysis plan of the robust-inference release.

Their plans were set after their runs (pendulum and multitask declared none; others the old defaults, whose margins
came from the compared runs). Each manifest gets the current plan, ``analysis_declared`` with today's date, the number
of runs that had finished and why, and the plan it replaces under ``analysis_history``, so every report says at the top
that its plan was fixed after its runs. multitask's confirmatory analysis is its planned 10 seeds (0-9); HalfCheetah's
seeds 10-19, added after looking at seeds 0-9, are reported as a replication.

    python tools/migrate_analysis_plans.py docs/studies/pendulum docs/studies/multitask ...
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sb3_ablation.common.io import write_json_atomic
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.store.runs import iter_runs

#: study folder name -> changes to the default plan
PLANS = {"multitask": {"seeds": list(range(10))}}
REASON = (
    "declared after the runs by tools/migrate_analysis_plans.py: the robust-inference release's plan (its defaults"
    "{extra}); the study's earlier plan is kept under analysis_history"
)


def migrate(folder: Path) -> None:
    path = folder / "study.json"
    manifest = json.loads(path.read_text())
    if manifest.get("analysis_declared", {}).get("note", "").startswith("declared after the runs by tools/"):
        manifest.setdefault("config", {})["analysis"] = manifest["analysis"]
        write_json_atomic(path, manifest)
        print(f"{folder}: already migrated")
        return
    changes = PLANS.get(folder.name, {})
    extra = "; confirmatory seeds " + ", ".join(map(str, changes["seeds"])) if "seeds" in changes else ""
    history = [*manifest.get("analysis_history", []), {"plan": manifest.get("analysis"), "replaced": "by the plan below"}]
    manifest["analysis"] = AnalysisPlan.from_dict(changes).to_dict()
    manifest["analysis_declared"] = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "finished_runs": sum(1 for _ in iter_runs(folder)),
        "note": REASON.format(extra=extra),
    }
    manifest["analysis_history"] = history
    # the last invocation's settings: its plan is the one replaced, kept in the history above
    manifest.setdefault("config", {})["analysis"] = manifest["analysis"]
    write_json_atomic(path, manifest)
    print(f"{folder}: plan {manifest['analysis']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    for folder in parser.parse_args().folders:
        migrate(folder)


if __name__ == "__main__":
    main()
