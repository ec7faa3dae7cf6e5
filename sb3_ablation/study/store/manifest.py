"""The manifest ``study.json``: the settings a study folder is tied to, its invocations' grids, its analysis plan with
its digest and amendments (:func:`open_manifest`, :func:`plan_versions`) and the hyperparameters tuning chose
(:func:`record_tuning`).

The plan is declared when the study folder is created: ``analysis`` (the plan in force), ``design`` (what the digest
covers besides the plan, :mod:`~sb3_ablation.study.plan.digest`) and ``analysis_declared`` (``at``, ``finished_runs``,
``digest``). Once runs exist, a different plan is refused unless declared as an amendment (``amend_plan``), which is
appended to ``amendments`` (``at``, ``finished_runs``, ``reason``, ``changes``, ``previous``, ``analysis``,
``digest``) and becomes the plan in force.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sb3_ablation.common.io import write_json_atomic
from sb3_ablation.study.plan.analysis_plan import DEFAULT_CLAIMS, AnalysisPlan, LearningRules
from sb3_ablation.study.plan.config import ResolvedHyperparams, StudyConfig, StudyError, to_jsonable
from sb3_ablation.study.plan.digest import plan_digest, study_design
from sb3_ablation.study.plan.records import RUN_FILE_FORMAT, timestamp, trained_by
from sb3_ablation.study.store.runs import RECORD_SUFFIX, env_folder, iter_runs, read_run

MANIFEST_NAME = "study.json"
MANIFEST_FORMAT = 1


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        diffs = []
        for key in sorted(set(old) | set(new)):
            diffs += _differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return diffs
    return [] if old == new else [f"{prefix.rstrip('.')} ({json.dumps(old)} there, {json.dumps(new)} now)"]


def _restrict_env_hyperparams(settings: dict[str, Any], envs: set[str]) -> dict[str, Any]:
    return {
        **settings,
        "env_hyperparams": {env: hp for env, hp in (settings.get("env_hyperparams") or {}).items() if env in envs},
    }


def open_manifest(config: StudyConfig, resolved_hyperparams: ResolvedHyperparams, versions: dict[str, str]) -> dict[str, Any]:
    """
    Create the study manifest, or check an existing one and extend its lists of envs, variants and seeds.

    :param config: this invocation's settings
    :param resolved_hyperparams: ``{env_id: {algo: zoo hyperparameters}}`` as each run will use them
    :param versions: library versions
    :return: the manifest as written
    :raises StudyError: the folder holds a study made with different run settings
    """
    path = Path(config.out) / MANIFEST_NAME
    # the record format too: a folder holds runs of one format (tools/migrate_studies.py, now in git history, converted
    # earlier ones)
    settings = {**config.run_settings(), "run_format": RUN_FILE_FORMAT}
    pinned = {"settings": settings, "hyperparams": to_jsonable(resolved_hyperparams)}
    manifest = None
    if path.exists():
        try:
            with open(path) as file:
                manifest = json.load(file)
        except json.JSONDecodeError as error:
            raise StudyError(f"{path} is not a study manifest ({error}); use another --out") from None
        old_pinned = {"settings": manifest.get("settings", {}), "hyperparams": manifest.get("hyperparams", {})}
        # per-env settings of envs present in both can conflict; the others belong to one side only
        shared_envs = set(manifest.get("envs", [])) & set(config.envs)
        old_pinned["settings"] = _restrict_env_hyperparams(old_pinned["settings"], shared_envs)
        pinned_now = {**pinned, "settings": _restrict_env_hyperparams(pinned["settings"], shared_envs)}
        # only hyperparameters of envs present in both can conflict; new envs just extend the study
        old_pinned["hyperparams"] = {
            env: old_pinned["hyperparams"][env] for env in old_pinned["hyperparams"] if env in pinned["hyperparams"]
        }
        new_pinned = {
            "settings": pinned_now["settings"],
            "hyperparams": {env: hp for env, hp in pinned["hyperparams"].items() if env in old_pinned["hyperparams"]},
        }
        # algorithms only one side uses (e.g. a reference row added now) cannot conflict either
        for env in new_pinned["hyperparams"]:
            common = set(new_pinned["hyperparams"][env]) & set(old_pinned["hyperparams"][env])
            new_pinned["hyperparams"][env] = {algo: new_pinned["hyperparams"][env][algo] for algo in common}
            old_pinned["hyperparams"][env] = {algo: old_pinned["hyperparams"][env][algo] for algo in common}
        # the settings as given explain a mismatch best; the resolved hyperparameters catch an edited zoo config
        diffs = _differences(old_pinned["settings"], new_pinned["settings"]) or _differences(
            old_pinned["hyperparams"], new_pinned["hyperparams"], "zoo hyperparameters of "
        )
        if diffs:
            raise StudyError(
                f"{config.out} holds a study made with different settings: {'; '.join(diffs)}. "
                "Use another --out, or the same settings to resume it"
            )
    created = manifest is None
    manifest = manifest or {"format": MANIFEST_FORMAT, "settings": pinned["settings"], "hyperparams": {}}
    manifest["settings"].setdefault("env_hyperparams", {}).update(pinned["settings"].get("env_hyperparams") or {})
    for env, by_algo in pinned["hyperparams"].items():
        manifest["hyperparams"].setdefault(env, {}).update(by_algo)
    # the runs planned: each invocation's grid
    grids = manifest.get("grids") or []
    grid: dict[str, list[Any]] = {"envs": list(config.envs), "variants": list(config.variants), "seeds": sorted(config.seeds)}
    manifest["grids"] = grids if set(_grid_runs([grid])) <= set(_grid_runs(grids)) else [*grids, grid]
    for key in ("envs", "variants", "seeds"):
        manifest[key] = list(dict.fromkeys([*manifest.get(key, []), *grid[key]]))
    manifest["seeds"] = sorted(manifest["seeds"])
    manifest["versions"] = versions
    manifest["config"] = to_jsonable({k: v for k, v in asdict(config).items() if k not in ("progress",)})
    if created:
        # the plan is declared with the study (a study made before plans existed keeps declaring none when it takes
        # more runs); when, and whether any run had finished then (a plan fixed after results is reported so)
        _declare_plan(manifest, config)
    elif "analysis" in manifest:
        _check_plan(manifest, config)
    write_json_atomic(path, manifest)
    return manifest


def _declare_plan(manifest: dict[str, Any], config: StudyConfig, analysis: dict[str, Any] | None = None) -> None:
    """Declare a plan (default ``config``'s) and ``config``'s design in ``manifest``, with the date, the runs finished
    and the digest."""
    manifest["analysis"] = to_jsonable(config.analysis) if analysis is None else analysis
    # a plan declared now declares where TD3 learns too: the rules' defaults unless the study file sets them
    manifest["analysis"].setdefault("learning", LearningRules().to_dict())
    # and how its claims share alpha: the default rule of new plans unless the study file names one
    manifest["analysis"].setdefault("claims", DEFAULT_CLAIMS)
    manifest["design"] = study_design(manifest["settings"], config.envs, config.variants)
    finished = sum(1 for _ in iter_runs(config.out))
    digest = plan_digest(manifest["design"], manifest["analysis"])
    manifest["analysis_declared"] = {"at": timestamp(), "finished_runs": finished, "digest": digest}
    if config.study_file:
        manifest["analysis_declared"]["study_file"] = committed_file(config.study_file)
    manifest.pop("amendments", None)


def committed_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """
    Where a study file stands in git when its plan is declared, so that a reader can check the plan was committed before
    the runs: ``path``, ``commit`` (the last commit that changed the file; ``None`` outside a git checkout or for an
    untracked file) and ``modified`` (the file differs from that commit).

    :param path: the study file
    """
    file = Path(path).resolve()

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=file.parent, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("log", "-1", "--format=%H", "--", file.name) or None
    modified = bool(git("status", "--porcelain", "--", file.name)) if commit else None
    return {"path": file.name, "commit": commit, "modified": modified}


def _plan_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two plans as dicts, one item per key: ``alpha 0.05 -> 0.1``."""
    return [
        f"{key} {json.dumps(old.get(key))} -> {json.dumps(new.get(key))}"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]


def _check_plan(manifest: dict[str, Any], config: StudyConfig) -> None:
    """
    Compare ``config``'s plan with the plan in force: equal, nothing to do; different before any run, declared anew;
    different after runs, kept as an amendment where ``config.amend_plan`` says why, else refused.

    A manifest from before digests gets its design and digest now (``analysis_declared.digest_added``).
    """
    if "design" not in manifest:
        first = (manifest.get("grids") or [{}])[0]
        envs, variants = first.get("envs", manifest["envs"]), first.get("variants", manifest["variants"])
        manifest["design"] = study_design(manifest["settings"], envs, variants)
        declared = manifest.setdefault("analysis_declared", {})
        original = (manifest.get("amendments") or [{}])[0].get("previous", manifest["analysis"])
        declared["digest"] = plan_digest(manifest["design"], original)
        declared["digest_added"] = timestamp()
        # amendments recorded without one (tools/migrate_plan_history.py, now in git history) get theirs, so new records
        # carry the digest
        for amendment in manifest.get("amendments") or []:
            if amendment.get("digest") is None:
                amendment["digest"] = plan_digest(manifest["design"], amendment["analysis"])
    current = manifest["analysis"]
    new = to_jsonable(config.analysis)
    # a key the declared plan predates, at its default, is no change: the report reads the declared plan with it
    defaults = AnalysisPlan().to_dict()
    new = {key: value for key, value in new.items() if key in current or value != defaults.get(key)}
    # a plan that declared the learning rules is resumed by a study file that leaves them out (their defaults)
    if "learning" in current and "learning" not in new:
        new["learning"] = LearningRules().to_dict()
    if "claims" in current and "claims" not in new:
        new["claims"] = DEFAULT_CLAIMS
    # --env picks some of a study's envs: the margins and failure returns of the others stay as declared
    for key in ("margins", "failure_returns"):
        kept = {env: value for env, value in (current.get(key) or {}).items() if env not in config.envs}
        new[key] = {**kept, **(new.get(key) or {})}
    changes = _plan_changes(current, new)
    if not changes:
        return
    finished = sum(1 for _ in iter_runs(config.out))
    if not finished:  # nothing has run under the declared plan: this one is declared instead
        _declare_plan(manifest, config, new)
        return
    declared_at = (manifest.get("analysis_declared") or {}).get("at", "an unknown date")
    if not config.amend_plan:
        raise StudyError(
            f"{config.out} declared its analysis plan on {declared_at} and {finished} runs exist, but this plan differs "
            f"from it ({'; '.join(changes)}): restore the declared plan, or declare the change as an amendment "
            "(--amend-plan REASON, or amend_plan: REASON in the study file)"
        )
    manifest.setdefault("amendments", []).append({
        "at": timestamp(),
        "finished_runs": finished,
        "reason": config.amend_plan.strip(),
        "changes": changes,
        "previous": current,
        "analysis": new,
        "digest": plan_digest(manifest["design"], new),
    })  # fmt: skip
    manifest["analysis"] = new


def plan_versions(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """
    The versions of a study's plan, oldest first: the declared plan, then each amendment.

    :param manifest: a study's manifest
    :return: per version ``analysis``, ``digest`` (``None`` where the manifest has none), ``at``, ``finished_runs`` and
        ``reason`` (``None`` for the declared plan); empty where the study declares no plan
    """
    if "analysis" not in manifest:
        return []
    amendments = manifest.get("amendments") or []
    declared = manifest.get("analysis_declared") or {}
    original = amendments[0]["previous"] if amendments else manifest["analysis"]
    versions = [{
        "analysis": original, "digest": declared.get("digest"), "at": declared.get("at"),
        "finished_runs": declared.get("finished_runs"), "reason": None,
    }]  # fmt: skip
    for amendment in amendments:
        versions.append({key: amendment.get(key) for key in ("analysis", "digest", "at", "finished_runs", "reason")})
    return versions


def plan_in_force_digest(manifest: dict[str, Any]) -> str | None:
    """The digest of the plan in force (the last amendment's, else the declared plan's); ``None``: no plan or digest."""
    versions = plan_versions(manifest)
    return versions[-1]["digest"] if versions else None


def record_tuning(out: str | os.PathLike[str], chosen: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """
    Write each (env, variant)'s tuning result into ``study.json`` (``"tuned"``; the search space, budget and tuning
    seeds are its ``settings.tuning``), replacing earlier results of the same (env, variant).

    :param out: the study folder (its manifest exists: :func:`open_manifest` came first)
    :param chosen: ``{env: {variant: result}}``, each result with ``hyperparams`` (the chosen values as zoo
        hyperparameters), the Optuna study's ``params``, ``value``, ``trial`` and trial counts
    :return: the manifest as written
    """
    manifest = read_manifest(out)
    tuned = manifest.setdefault("tuned", {})
    for env, by_variant in chosen.items():
        tuned.setdefault(env, {}).update(to_jsonable(by_variant))
    write_json_atomic(Path(out) / MANIFEST_NAME, manifest)
    return manifest


def tuned_hyperparams(manifest: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """
    :param manifest: a study's manifest
    :return: ``{variant: {env: chosen zoo hyperparameters}}`` of every tuned (env, variant), as ``variant_hyperparams``
        of :class:`~sb3_ablation.study.plan.config.StudyConfig` takes them
    """
    by_variant: dict[str, dict[str, dict[str, Any]]] = {}
    for env, results in (manifest.get("tuned") or {}).items():
        for variant, result in results.items():
            by_variant.setdefault(variant, {})[env] = dict(result["hyperparams"])
    return by_variant


def planned_runs(manifest: dict[str, Any]) -> list[tuple[str, str, int]]:
    """
    The ``(env, variant, seed)`` of every run a study plans: the union of its invocations' grids (envs x variants x
    seeds), so that more seeds of a few variants (``--variants td3,no_clipped_double_q --seeds 10 11 ... 19``) do not plan
    them for every variant (a hand-written manifest without grids plans none: no run is reported missing).
    """
    return _grid_runs(manifest.get("grids") or [])


def _grid_runs(grids: list[dict[str, list[Any]]]) -> list[tuple[str, str, int]]:
    runs = (
        (env, variant, int(seed))
        for grid in grids
        for env in grid["envs"]
        for variant in grid["variants"]
        for seed in grid["seeds"]
    )
    return list(dict.fromkeys(runs))


def check_seed_engines(out: str | os.PathLike[str], tasks: Iterable[tuple[str, int]], engine: str) -> None:
    """
    Refuse to train a seed of an env with another engine than its finished runs: the analysis compares a seed's
    runs with each other (paired differences, the seed as a block), so each comparison stays within one engine. Other
    seeds may come from another engine (the report names which engine trained which runs).

    :param out: the study folder
    :param tasks: the ``(env, seed)`` of the runs to train
    :param engine: the engine that would train them
    :raises StudyError: a finished run of one of these seeds was trained by another engine
    """
    for env, seed in dict.fromkeys(tasks):
        for path in sorted(env_folder(out, env).glob(f"*/seed_{seed}{RECORD_SUFFIX}")):
            record = read_run(path)
            if record is not None and record.get("status") == "ok" and trained_by(record) != engine:
                other = trained_by(record)
                raise StudyError(
                    f"{env} seed {seed} has runs of the {other} engine ({path}), and a seed's runs are compared "
                    f"with each other: train it with --engine {other}, or use other seeds for --engine {engine}"
                )


def read_manifest(out: str | os.PathLike[str]) -> dict[str, Any]:
    """Read ``<out>/study.json``, with a one-line error when the folder is not a study."""
    path = Path(out) / MANIFEST_NAME
    if not path.is_file():
        raise StudyError(f"{out} is not a study folder (no {MANIFEST_NAME}); run `sb3-ablation study --out {out}` first")
    try:
        with open(path) as file:
            manifest = json.load(file)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise StudyError(f"{path} is not a readable study manifest ({error})") from None
    if not isinstance(manifest, dict) or not all(key in manifest for key in ("envs", "variants", "seeds")):
        raise StudyError(f"{path} is not a study manifest (no envs, variants and seeds)")
    return manifest
