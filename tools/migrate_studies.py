"""One-off: convert study folders to the current run record and manifest formats.

    python tools/migrate_studies.py                               # every study under docs/studies but pendulum-2x6
    python tools/migrate_studies.py docs/studies/pendulum-2x6     # named folders (pendulum-2x6 only this way)
    python tools/migrate_studies.py --dry-run                     # say what would change, write nothing

Run records (``seed_<k>.json`` or ``.json.gz`` of record format 2 or 3) become ``seed_<k>.json.gz`` of
:data:`~sb3_ablation.study.plan.records.RUN_FILE_FORMAT`, read back and checked before anything is removed:

- the overestimation measure of format 2 (``mean_q``, ``mean_discounted_return``, ``bias``: returns cut at the time
  limit) and its ingredients in ``value_episodes`` (``cut_states``, ``cut_q_sum``, ``cut_return_sum``) are dropped;
  a record of format 2 has no current measure (``overestimation``, ``relative_overestimation``, ``value_states``,
  ``value_episodes``, ``overestimation_method``: measured from format 3 on), which stays missing and is counted;
- ``model`` (``vecnormalize``) naming a file that is not there (final models pruned) becomes null (is dropped);
- entries in the order the current writer puts them.

Manifests (``study.json``): ``settings.engine`` (a seed's, not a folder's, since the engine check) is dropped;
``settings.run_format`` becomes the current format; ``grids`` is added where missing (the lists' whole product, which
is what such a manifest planned); an ``analysis`` plan the current ``AnalysisPlan`` does not read (e.g. with the old
``margin_fraction``) is replaced by the current defaults ``AnalysisPlan().to_dict()``, with
``analysis_declared`` saying so (and ``config.analysis`` with it). A record of another format (1: evaluated on other
episodes) is not converted: the folder's manifest is then left alone and the script exits with status 1.

A folder a study is writing into (its lock is held) is skipped; the lock file itself is never written.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import gzip
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sb3_ablation.common.io import write_json_atomic
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, PlanError
from sb3_ablation.study.plan.records import RUN_FILE_FORMAT, RunRecord
from sb3_ablation.study.store.lock import LOCK_NAME
from sb3_ablation.study.store.manifest import MANIFEST_NAME
from sb3_ablation.study.store.runs import RECORD_SUFFIX, finite_or_none, read_run, write_run

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "docs" / "studies"
#: folders converted only when named (a study was writing into it when this script was written)
ONLY_WHEN_NAMED = ("pendulum-2x6",)
CONVERTIBLE = (2, 3)
#: format 2's measure, cut at the time limit, and its ingredients in a format-3 record's value_episodes
OLD_MEASURE = ("mean_q", "mean_discounted_return", "bias")
OLD_SUMMARY = ("cut_states", "cut_q_sum", "cut_return_sum")
CURRENT_MEASURE = ("overestimation", "relative_overestimation", "value_states")
NOTE = "declared after the runs by tools/migrate_studies.py"
MISSING = "without the overestimation measure (made before format 3)"
REWRITTEN = "rewritten"


class FolderBusy(Exception):
    """A study is writing into the folder."""


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """
    Hold the study folder's lock (the one a study holds: ``flock`` on ``.study.lock``) without writing into the file,
    which names the study that holds it; a file this had to create is removed when done, as a study removes its own.

    :raise FolderBusy: a study holds it
    """
    path = folder / LOCK_NAME
    created = not path.exists()
    with open(path, "a+") as file:
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            raise FolderBusy(f"a study ({file.read().strip() or 'another process'}) is writing into it") from None
        try:
            yield
        finally:
            if created:
                with contextlib.suppress(OSError):
                    path.unlink()
            fcntl.flock(file.fileno(), fcntl.LOCK_UN)


class Unconvertible(ValueError):
    """A record this script does not convert."""


def convert_record(record: dict[str, Any], folder: Path) -> dict[str, Any]:
    """
    The record in the current format, as the current writer writes it.

    :param folder: the record's folder (where its model would be)
    :raise Unconvertible: a record of another format than 2 or 3
    """
    if record.get("format") not in CONVERTIBLE:
        raise Unconvertible(f"record format {record.get('format')!r} (this script converts formats 2 and 3)")
    entries = {key: value for key, value in record.items() if key != "format"}
    entries["evaluations"] = {key: value for key, value in record["evaluations"].items() if key not in OLD_MEASURE}
    if "value_episodes" in record:
        entries["value_episodes"] = [
            [{key: value for key, value in episode.items() if key not in OLD_SUMMARY} for episode in evaluation]
            for evaluation in record["value_episodes"]
        ]
    if entries.get("model") and not (folder / entries["model"]).is_file():
        entries["model"] = None
    if "vecnormalize" in entries and not (folder / entries["vecnormalize"]).is_file():
        del entries["vecnormalize"]
    return finite_or_none(RunRecord(**entries, format=RUN_FILE_FORMAT).to_json())


def lacks_current_measure(record: dict[str, Any]) -> bool:
    """A finished run without the current overestimation measure."""
    return record.get("status") == "ok" and not all(key in record["evaluations"] for key in CURRENT_MEASURE)


def migrate_records(folder: Path, dry_run: bool) -> tuple[Counter, list[str]]:
    """Convert every record of ``folder``; return counts and the records not converted (with why)."""
    counts: Counter = Counter()
    problems = []
    runs = folder / "runs"
    paths = sorted({*runs.glob(f"*/*/seed_*{RECORD_SUFFIX}"), *runs.glob("*/*/seed_*.json")})
    for path in paths:
        compressed = path.name.endswith(RECORD_SUFFIX)
        target = path if compressed else path.with_name(path.name + ".gz")
        try:
            record = json.loads(gzip.decompress(path.read_bytes()) if compressed else path.read_bytes())
            converted = convert_record(record, path.parent)
        except (OSError, EOFError, ValueError) as error:  # (a corrupt or truncated file, or another format)
            problems.append(f"{path}: {type(error).__name__}: {error}")
            continue
        if not compressed and target.exists():
            problems.append(f"{path}: both it and {target.name} exist; neither converted")
            continue
        counts[f"of format {record['format']}"] += 1
        counts[MISSING] += lacks_current_measure(converted)
        counts["naming a model file not there (now null)"] += bool(record.get("model")) and converted["model"] is None
        if converted == record and compressed:
            continue
        counts[REWRITTEN] += 1
        if dry_run:
            continue
        write_run(target, converted)
        if read_run(target) != json.loads(json.dumps(converted)):
            raise SystemExit(f"{target}: the record read back differs from the one converted; stopped")
        if not compressed:
            path.unlink()
    return counts, problems


def migrate_manifest(folder: Path, dry_run: bool) -> list[str]:
    """Bring ``study.json`` to the current manifest format; return what changed."""
    path = folder / MANIFEST_NAME
    manifest = json.loads(path.read_text())
    changes = []
    settings = manifest.setdefault("settings", {})
    if "engine" in settings:
        changes.append(f"settings.engine {settings.pop('engine')!r} dropped")
    if settings.get("run_format") != RUN_FILE_FORMAT:
        changes.append(f"settings.run_format {settings.get('run_format')} -> {RUN_FILE_FORMAT}")
        settings["run_format"] = RUN_FILE_FORMAT
    if not manifest.get("grids"):
        manifest["grids"] = [{key: list(manifest[key]) for key in ("envs", "variants", "seeds")}]
        changes.append("grids added (the lists' whole product)")
    if "analysis" in manifest:
        try:
            AnalysisPlan.from_dict(manifest["analysis"])
        except (PlanError, TypeError) as error:
            manifest["analysis"] = AnalysisPlan().to_dict()
            finished = sum(1 for record_path in folder.glob(f"runs/*/*/seed_*{RECORD_SUFFIX}") if read_run(record_path))
            manifest["analysis_declared"] = {
                "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "finished_runs": finished,
                "note": NOTE,
            }
            changes.append(f"analysis replaced by the current defaults ({error})")
    config = manifest.get("config") or {}
    if "analysis" in config:
        try:
            AnalysisPlan.from_dict(config["analysis"])
        except (PlanError, TypeError):
            config["analysis"] = manifest.get("analysis")
            changes.append("config.analysis replaced by the manifest's plan")
    if changes and not dry_run:
        write_json_atomic(path, manifest)
    return changes


def migrate(folder: Path, dry_run: bool) -> bool:
    """Convert one study folder; print what was done. :return: whether every record was converted."""
    try:
        with folder_lock(folder):
            counts, problems = migrate_records(folder, dry_run)
            changes = migrate_manifest(folder, dry_run) if not problems else ["left alone (records not converted)"]
    except FolderBusy as error:
        print(f"{folder}: skipped: {error}")
        return True
    total = sum(count for key, count in counts.items() if key.startswith("of format"))
    details = "; ".join(f"{n} {key}" for key, n in sorted(counts.items()) if n and key not in (MISSING, REWRITTEN))
    rewritten = f"{counts[REWRITTEN]} {'to be ' if dry_run else ''}rewritten in format {RUN_FILE_FORMAT}"
    print(f"{folder}: {total} records ({details}), {rewritten}")
    if counts[MISSING]:
        print(f"  {counts[MISSING]} finished runs made before format 3 have no overestimation measure: left missing")
    for line in problems:
        print(f"  not converted: {line}")
    print(f"  study.json: {'; '.join(changes) or 'current already'}")
    return not problems


def default_folders() -> list[Path]:
    return [path.parent for path in sorted(STUDIES.glob(f"*/{MANIFEST_NAME}")) if path.parent.name not in ONLY_WHEN_NAMED]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help=f"study folders (default: those under {STUDIES})")
    parser.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")
    args = parser.parse_args(argv)
    folders = args.folders or default_folders()
    results = [migrate(folder, args.dry_run) for folder in folders]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
