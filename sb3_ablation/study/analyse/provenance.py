"""Which plan each run of a study was made under, and which runs came from other studies: :func:`study_provenance`.

Every record a study writes carries the digest of the plan in force (``plan_digest``,
:mod:`~sb3_ablation.study.plan.digest`); ``study.json`` holds the plan's versions (the declared plan, then each
amendment, :func:`~sb3_ablation.study.store.manifest.plan_versions`). A record is then one of:

- under the plan it is analysed under (its digest is that plan's);
- under an earlier version of the study's plan (run before an amendment);
- under another plan (a digest that is no version of this study's plan: a record copied from another study, or a
  plan edited by hand);
- from before digests (no ``plan_digest``: records written before the package wrote digests, e.g. the committed
  studies' runs).

Apart from that, a record that finished before the plan was declared (``finished_at`` before
``analysis_declared.at``) was not made under it, whatever it carries. A run shared with another study is found by
comparing each record with the record at the same place in each other study folder, or declared in the manifest
(``reused``: a list of ``{"from": folder, "runs": [[env, variant, seed], ...]}``):

- *copied*: the same content (digest of the decompressed record), i.e. the other study's record itself;
- *reproduced*: the same results (:data:`RESULT_KEYS`: settings, evaluations, diagnostics) but another run (its host,
  times and date differ): the same seed and settings run again, which the engines reproduce bit for bit, so it adds
  no independent evidence to the other study's.

A declared reuse may say how (``how``) and why (``note``); where the source is not searched (``others=[]``, as the
report does) the declared ``how`` stands.

Records of the batched engine from before per-agent random streams (:func:`group_dependent`) cannot be reproduced
one by one: their batched group's composition set their random streams.
"""

from __future__ import annotations

import datetime
import gzip
import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sb3_ablation.study.plan.digest import canonical_json, plan_digest
from sb3_ablation.study.store.manifest import MANIFEST_NAME, plan_versions, read_manifest
from sb3_ablation.study.store.runs import read_run, record_paths

#: ``(env, variant, seed)`` of a run
RunKey = tuple[str, str, int]

#: when the group-invariant batched engine (each agent its own random streams: commit 0c23adc) reached the main line
#: (merge 23942c2); the plan digests came in the same minute (merge da3fb30), so a batched record with a digest is
#: group-invariant and one without, finished before this, is not
GROUP_INVARIANT_SINCE = "2026-11-26T19:28:38+0000"
UNDER_PLAN, EARLIER_VERSION, OTHER_PLAN, BEFORE_DIGESTS = "under the plan", "earlier version", "another plan", "no digest"
COPIED, REPRODUCED = "copied", "reproduced"
#: the entries of a record that its settings and seed determine (not its host, software versions, times or date)
RESULT_KEYS = (
    "env", "variant", "seed", "algo", "switches", "hyperparams", "eval_freq", "eval_episodes", "status", "n_timesteps",
    "evaluations", "value_episodes", "diagnostics",
)  # fmt: skip


@dataclass(frozen=True)
class RecordProvenance:
    """
    One record's provenance.

    :param run: its ``(env, variant, seed)``
    :param path: the record's path relative to the study folder
    :param digest: its ``plan_digest`` (``None``: written before digests)
    :param status: :data:`UNDER_PLAN`, :data:`EARLIER_VERSION`, :data:`OTHER_PLAN` or :data:`BEFORE_DIGESTS`
    :param version: the index of the plan version it was made under (0: the declared plan), where it is one
    :param before_plan: it finished before the plan was declared (``None``: a date is missing)
    :param content_digest: SHA-256 of the record's content (the decompressed JSON)
    :param result_digest: SHA-256 of its results (:data:`RESULT_KEYS` in canonical JSON)
    :param engine: the engine that trained it (``None``: the process engine, or a record without the key)
    :param finished_at: when it finished, as the record says (``None``: not recorded)
    :param resumed_from: the step of the checkpoint the run resumed from (``None``: it ran without a break)
    :param source_digest: the digest of the package source that made it (``None``: a record made before records
        carried it)
    """

    run: RunKey
    path: str
    digest: str | None
    status: str
    version: int | None
    before_plan: bool | None
    content_digest: str
    result_digest: str
    engine: str | None = None
    finished_at: str | None = None
    resumed_from: int | None = None
    source_digest: str | None = None

    @property
    def group_dependent(self) -> bool:
        """Trained by the batched engine before per-agent random streams (:data:`GROUP_INVARIANT_SINCE`): its group's
        composition set its random streams, so it cannot be reproduced on its own."""
        if self.engine != "batched" or self.digest is not None:
            return False
        finished, since = _parse_time(self.finished_at), _parse_time(GROUP_INVARIANT_SINCE)
        return finished is None or since is None or finished < since


@dataclass(frozen=True)
class ReusedRun:
    """
    A run whose record is also another study's.

    :param run: its ``(env, variant, seed)``
    :param source: the other study's folder
    :param how: :data:`COPIED` (the same record) or :data:`REPRODUCED` (the same results, another run); ``None``: declared
        in the manifest but not found in the source
    :param declared: this study's manifest declares the reuse (``reused``)
    :param digest: SHA-256 of this study's record (:func:`record_digest`), where the study has it
    :param note: the manifest's word on the reuse (``note`` of its ``reused`` entry)
    """

    run: RunKey
    source: str
    how: str | None
    declared: bool
    digest: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Provenance:
    """
    What :func:`study_provenance` finds.

    :param digest: the digest of the plan the records are checked against (``None``: the study declares no plan)
    :param verified: every digest stored in ``study.json`` equals the one recomputed from its plan and design
        (``None``: it stores none)
    :param versions: the digest of each version of the plan (declared, then amendments)
    :param records: every readable record, in path order
    :param reused: the runs reused from other studies, found by content or declared
    """

    digest: str | None
    verified: bool | None
    versions: tuple[str | None, ...]
    records: tuple[RecordProvenance, ...]
    reused: tuple[ReusedRun, ...]

    def runs(self, status: str) -> list[RunKey]:
        """The runs whose record has ``status`` (e.g. :data:`BEFORE_DIGESTS`)."""
        return [record.run for record in self.records if record.status == status]

    @property
    def before_plan(self) -> list[RunKey]:
        """The runs that finished before the plan was declared."""
        return [record.run for record in self.records if record.before_plan]

    @property
    def mismatched(self) -> list[RecordProvenance]:
        """The records not made under the plan they are checked against (any other status, or finished before it)."""
        return [record for record in self.records if record.status != UNDER_PLAN or record.before_plan]

    @property
    def clean(self) -> bool:
        """Every record was made under the plan, after it was declared, and none was reused; the digests verify."""
        return bool(self.verified) and not self.mismatched and not self.reused

    def shared(self, how: str) -> list[ReusedRun]:
        """The runs shared with other studies in one way (:data:`COPIED` or :data:`REPRODUCED`)."""
        return [run for run in self.reused if run.how == how]

    @property
    def group_dependent(self) -> list[RunKey]:
        """The runs whose batched group set their random streams (:attr:`RecordProvenance.group_dependent`)."""
        return [record.run for record in self.records if record.group_dependent]

    @property
    def resumed(self) -> dict[int, list[RunKey]]:
        """The runs that resumed from a checkpoint, by the checkpoint's step."""
        steps: dict[int, list[RunKey]] = {}
        for record in self.records:
            if record.resumed_from:
                steps.setdefault(record.resumed_from, []).append(record.run)
        return dict(sorted(steps.items()))

    @property
    def source_digests(self) -> dict[str | None, int]:
        """How many records each source digest made (``None``: records without one)."""
        counts: dict[str | None, int] = {}
        for record in self.records:
            counts[record.source_digest] = counts.get(record.source_digest, 0) + 1
        return counts


def record_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a run record's content (its decompressed JSON, so the compression cannot differ)."""
    with gzip.open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def result_digest(record: Mapping[str, Any]) -> str:
    """SHA-256 of a run record's results: its :data:`RESULT_KEYS` in canonical JSON."""
    return hashlib.sha256(canonical_json({key: record[key] for key in RESULT_KEYS if key in record})).hexdigest()


def _parse_time(text: Any) -> datetime.datetime | None:
    try:
        return datetime.datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return None


def _verified(manifest: Mapping[str, Any], versions: list[dict[str, Any]]) -> bool | None:
    design = manifest.get("design")
    stored = [version for version in versions if version["digest"] is not None]
    if not stored:
        return None
    if design is None:
        return False
    return all(plan_digest(design, version["analysis"]) == version["digest"] for version in stored)


def study_folders(root: str | os.PathLike[str]) -> list[Path]:
    """Every study folder under ``root`` (a folder with ``study.json``, at any depth), sorted."""
    return sorted(path.parent for path in Path(root).glob(f"**/{MANIFEST_NAME}"))


def study_provenance(
    out: str | os.PathLike[str],
    others: Iterable[str | os.PathLike[str]] | None = None,
    analysis: Mapping[str, Any] | None = None,
) -> Provenance:
    """
    The provenance of every record of a study (see the module docstring).

    :param out: the study folder
    :param others: the study folders to look for reused runs in (default: every study folder under ``out``'s parent,
        :func:`study_folders`); ``out`` itself is skipped
    :param analysis: the plan the records are analysed under, as a dict (default: the plan in force); its digest is
        taken with the study's design
    :return: the :class:`Provenance`
    """
    out = Path(out)
    manifest = read_manifest(out)
    versions = plan_versions(manifest)
    digests = tuple(version["digest"] for version in versions)
    if analysis is not None and manifest.get("design") is not None:
        target: str | None = plan_digest(manifest["design"], dict(analysis))
    else:
        target = digests[-1] if digests else None
    declared_at = _parse_time((manifest.get("analysis_declared") or {}).get("at"))
    records = []
    for path in record_paths(out):
        record = read_run(path)
        if record is None:
            continue
        digest = record.get("plan_digest")
        version = next((i for i in range(len(digests) - 1, -1, -1) if digest is not None and digests[i] == digest), None)
        if digest is None:
            status = BEFORE_DIGESTS
        elif digest == target:
            status = UNDER_PLAN
        elif version is not None:
            status = EARLIER_VERSION
        else:
            status = OTHER_PLAN
        finished = _parse_time(record.get("finished_at"))
        before = None if finished is None or declared_at is None or not versions else finished < declared_at
        run = (str(record["env"]), str(record["variant"]), int(record["seed"]))
        relative = path.relative_to(out).as_posix()
        records.append(
            RecordProvenance(
                run,
                relative,
                digest,
                status,
                version,
                before,
                record_digest(path),
                result_digest(record),
                record.get("engine"),
                None if record.get("finished_at") is None else str(record["finished_at"]),
                None if record.get("resumed_from") is None else int(record["resumed_from"]),
                None if record.get("source_digest") is None else str(record["source_digest"]),
            )
        )
    return Provenance(target, _verified(manifest, versions), digests, tuple(records), _reused(out, manifest, records, others))


def _reused(
    out: Path,
    manifest: Mapping[str, Any],
    records: list[RecordProvenance],
    others: Iterable[str | os.PathLike[str]] | None,
) -> tuple[ReusedRun, ...]:
    folders = study_folders(out.resolve().parent) if others is None else [Path(other) for other in others]
    # a source is known by its folder's name: the manifest names it as written there, a search as found here
    declared: dict[tuple[RunKey, str], Mapping[str, Any]] = {}
    for entry in manifest.get("reused") or []:
        for env, variant, seed in entry.get("runs") or []:
            declared[((str(env), str(variant), int(seed)), Path(str(entry["from"])).name)] = entry
    found: dict[tuple[RunKey, str], tuple[str, str]] = {}
    searched = set()
    for folder in folders:
        if folder.resolve() == out.resolve() or not (folder / MANIFEST_NAME).is_file():
            continue
        searched.add(folder.name)
        for record in records:
            twin = folder / record.path
            if not twin.is_file():
                continue
            if record_digest(twin) == record.content_digest:
                found[(record.run, folder.name)] = (str(folder), COPIED)
            elif (other := read_run(twin)) is not None and result_digest(other) == record.result_digest:
                found[(record.run, folder.name)] = (str(folder), REPRODUCED)
    digests = {record.run: record.content_digest for record in records}
    reused = []
    for run, name in sorted(set(declared) | set(found)):
        entry = declared.get((run, name)) or {}
        if (run, name) in found:
            how: str | None = found[(run, name)][1]
        else:  # declared: not found where searched, else as the manifest says
            how = None if name in searched else entry.get("how")
        source = str(entry["from"]) if entry else found[(run, name)][0]
        reused.append(ReusedRun(run, source, how, bool(entry), digests.get(run), str(entry.get("note") or "")))
    return tuple(reused)
