"""One-off, idempotent: the committed studies' manifests (study.json) say the history their plans really had.

What git and the records show (``git log --follow`` of each study.json, study file and the records' ``finished_at``):

- pendulum-2x6: declared at 07:01:10 on 2026-11-25 with no run finished in its folder (true), but 80 of its 640 runs,
  the 16 cells of the 2^4 design on seeds 0-4, reproduce pendulum-factorial's runs of 2026-11-23 bit for bit (same
  settings, seeds and batched groups of 5; only host times differ), so their results were known when the plan was
  declared. They are declared under ``reused`` with both studies' record digests.
- pendulum-2x6 and hopper-half-fraction: ``equivalence_test: wilcoxon`` was added to their plans in commit b76c37b
  (2026-11-25 08:19:40 UTC), after their runs had finished (all 640; 70 of 320), when the package's default
  equivalence test became the sign-flip TOST of the mean. The plan as declared had no such key, and the report reads
  it with the current default. The edit is kept as an amendment (``amendments``), with the plan as declared, so that
  the report shows the verdicts under both.
- hopper-half-fraction: its 40 finished runs at declaration are hopper-factorial's records, copied (the same files);
  TD3's seeds 5-9 reproduce multitask's Hopper-v5 runs bit for bit. Both are declared under ``reused``.
- pendulum-sequential: its study file, study.json and first 70 records first appear in one commit (2fe9d67,
  2026-11-25 10:24:11 UTC): git does not show the plan came first; only the package's timestamps do. Said in
  ``analysis_declared.note``.

The hopper-paper-300k studies are never touched. Running this again changes nothing.

    python tools/migrate_plan_history.py [docs/studies]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sb3_ablation.common.io import write_json_atomic
from sb3_ablation.study.analyse.provenance import record_digest, result_digest
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.store.runs import read_run, record_paths

#: when ``equivalence_test: wilcoxon`` was committed into the plans (commit b76c37b)
EQUIVALENCE_EDIT_AT = "2026-11-25T08:19:40+0000"
EQUIVALENCE_REASON = (
    "equivalence_test: wilcoxon added to the declared plan in commit b76c37b, after runs had finished, when the "
    "package's default equivalence test became the sign-flip TOST of the mean; until then the equivalence test was "
    "the plan's test (Wilcoxon), so the amendment keeps the test the code had used, but the plan as declared reads "
    "with the new default (recorded by tools/migrate_plan_history.py)"
)
SEQUENTIAL_NOTE = (
    "the study file (pendulum_sequential.yml), this study.json and the first 70 records were first committed together "
    "(commit 2fe9d67, 2026-11-25 10:24:11 UTC), so git does not show that the plan came first; only the package's own "
    "timestamps do (plan declared at 09:52:45, first record finished at 09:59:17)"
)
TWO_BY_SIX_NOTE = (
    "no run of this folder had finished, but 80 of its runs (the 2^4 design's 16 cells, seeds 0-4) reproduce "
    "pendulum-factorial's runs of 2026-11-23 bit for bit, so their results were known when the plan was declared "
    "(see reused)"
)

#: folder -> what it reuses: (source folder, how, note, which of its runs: (variant filter or None, seeds or None))
REUSED: dict[str, list[tuple[str, str, str]]] = {
    "pendulum-2x6": [(
        "pendulum-factorial", "reproduced",
        "the 2^4 design's cells on seeds 0-4, run again in this study after its plan was declared, with the settings, "
        "seeds and batched groups of 5 of pendulum-factorial (2026-11-23), whose results were known then",
    )],
    "hopper-half-fraction": [
        (
            "hopper-factorial", "copied",
            "the 2^4 study's cells of this fraction on seeds 0-4, copied in before this design's first run and before "
            "its plan was declared",
        ),
        (
            "multitask", "reproduced",
            "TD3's seeds 5-9, run again in this study's second block with the settings and batched group of "
            "multitask's Hopper-v5 runs, whose results were known when the plan was declared",
        ),
    ],
}  # fmt: skip
AMENDED = ("pendulum-2x6", "hopper-half-fraction")
NEVER = ("hopper-paper-300k",)


def _shared_runs(folder: Path, source: Path, how: str) -> list[dict[str, Any]]:
    """The runs whose record is ``source``'s record at the same place: the same file (copied) or the same results."""
    shared = []
    for path in record_paths(folder):
        twin = source / path.relative_to(folder)
        if not twin.is_file():
            continue
        mine, theirs = read_run(path), read_run(twin)
        if mine is None or theirs is None:
            continue
        same = record_digest(path) == record_digest(twin) if how == "copied" else result_digest(mine) == result_digest(theirs)
        if same:
            shared.append({
                "run": [mine["env"], mine["variant"], int(mine["seed"])],
                "record_digest": record_digest(path),
                "source_record_digest": record_digest(twin),
                "result_digest": result_digest(mine),
            })  # fmt: skip
    return sorted(shared, key=lambda item: (item["run"][0], item["run"][1], item["run"][2]))


def _finished_before(folder: Path, at: str) -> int:
    # the records' finished_at and the dates here share one format (UTC, +0000), so they sort as text
    return sum(1 for path in record_paths(folder) if str((read_run(path) or {}).get("finished_at", "")) < at)


def migrate(folder: Path) -> bool:
    """Correct one study's manifest; ``True`` when it changed."""
    if folder.name.startswith(NEVER):
        raise SystemExit(f"{folder}: never touched by this tool")
    path = folder / "study.json"
    manifest = json.loads(path.read_text())
    before = json.dumps(manifest, sort_keys=True)
    studies = folder.parent
    if folder.name in REUSED:
        manifest["reused"] = []
        for source, how, note in REUSED[folder.name]:
            runs = _shared_runs(folder, studies / source, how)
            if not runs:
                raise SystemExit(f"{folder}: no run shared with {source} ({how}); the records changed?")
            manifest["reused"].append({
                "from": f"docs/studies/{source}", "how": how, "note": note,
                "runs": [item["run"] for item in runs],
                "records": runs,
            })  # fmt: skip
    if folder.name in AMENDED and not manifest.get("amendments"):
        current = manifest["analysis"]
        if current.get("equivalence_test") != "wilcoxon":
            raise SystemExit(f"{folder}: expected equivalence_test wilcoxon in its plan, got {current!r}")
        previous = {key: value for key, value in current.items() if key != "equivalence_test"}
        manifest["amendments"] = [{
            "at": EQUIVALENCE_EDIT_AT,
            "finished_runs": _finished_before(folder, EQUIVALENCE_EDIT_AT),
            "reason": EQUIVALENCE_REASON,
            "changes": AnalysisPlan.from_dict(current).differences(AnalysisPlan.from_dict(previous)),
            "previous": previous,
            "analysis": current,
            "digest": None,  # plans of that time had no digest (and study.json no design)
        }]  # fmt: skip
    declared = manifest.setdefault("analysis_declared", {})
    if folder.name == "pendulum-sequential":
        declared["note"] = SEQUENTIAL_NOTE
    if folder.name == "pendulum-2x6":
        declared["note"] = TWO_BY_SIX_NOTE
    changed = json.dumps(manifest, sort_keys=True) != before
    if changed:
        write_json_atomic(path, manifest)
    print(f"{folder}: {'corrected' if changed else 'already correct'}")
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("studies", nargs="?", type=Path, default=Path("docs/studies"))
    root = parser.parse_args().studies
    for name in ("pendulum-2x6", "hopper-half-fraction", "pendulum-sequential"):
        migrate(root / name)


if __name__ == "__main__":
    main()
