"""The report's account of its runs: the header's training steps and overrides, the status line, the software and
engines the runs were made with, the warnings they raised, and the runs that failed or are missing."""

from __future__ import annotations

from collections.abc import Iterable

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.results import StudyData
from sb3_ablation.study.store.manifest import planned_runs


def training_steps_text(manifest: dict) -> str:
    """Each env's training steps as its runs used them (the resolved zoo hyperparameters in the manifest)."""
    steps = {
        env: {
            int(float(hp["n_timesteps"]))
            for hp in manifest.get("hyperparams", {}).get(env, {}).values()
            if "n_timesteps" in hp
        }
        for env in manifest.get("envs", [])
    }
    if not any(steps.values()):
        return str(manifest.get("settings", {}).get("n_timesteps") or "the zoo default of each env")
    every_env = set().union(*steps.values())
    if len(every_env) == 1 and all(steps.values()):
        return f"{every_env.pop():,}"
    return ", ".join(f"{env} {'/'.join(f'{n:,}' for n in sorted(v)) or '?'}" for env, v in steps.items())


def overrides_text(settings: dict) -> str:
    """The study's overrides of the zoo hyperparameters (other than the training steps), as the study file gives them."""
    overrides = {**settings.get("hyperparams", {})}
    for env, by_env in (settings.get("env_hyperparams") or {}).items():
        overrides.update({f"{key} ({env})": value for key, value in by_env.items() if key != "n_timesteps"})
    if not overrides:
        return ""
    return "; zoo hyperparameters otherwise, with " + ", ".join(f"{key}: {value}" for key, value in overrides.items())


def status_markdown(data: StudyData) -> str:
    """
    How far a study is (the report's status line): its finished runs of the planned
    ones (:func:`~sb3_ablation.study.store.manifest.planned_runs`) and the seeds each engine trained.
    """
    planned = len(planned_runs(data.manifest))
    finished = sum(len(keys) for keys in data.engines.values())
    engines = "; ".join(
        f"{plural(len(keys), 'run')} of seeds {seed_ranges({seed for _, _, seed in keys})} by the {engine} engine"
        for engine, keys in sorted(data.engines.items(), key=lambda item: min(seed for _, _, seed in item[1]))
    )
    left = planned - finished
    rest = f"; {left} to run or rerun ({len(data.failed)} failed)" if left else ""
    seeds = seed_ranges(set(data.manifest["seeds"]))
    return f"**Status: {finished} of {planned} runs finished** (seeds {seeds}; {engines}{rest}).\n"


def seed_ranges(seeds: set[int]) -> str:
    """``0-4, 7``: sorted seeds with runs of consecutive ones joined."""
    runs: list[list[int]] = []
    for seed in sorted(seeds):
        if runs and seed == runs[-1][-1] + 1:
            runs[-1].append(seed)
        else:
            runs.append([seed])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def warnings_section(data: StudyData) -> list[str]:
    """Each warning the runs raised, once, with the runs that raised it."""
    if not data.warnings:
        return []
    lines = ["## Run warnings", "", "Each warning once, with the runs that raised it:", ""]
    for message, keys in sorted(data.warnings.items()):
        lines.append(f"- `{message.splitlines()[0]}`: {runs_by_env_variant(keys, data)}")
    return [*lines, ""]


# what the finished runs were made with, each: (StudyData field, the line where every run shares one value, the
# lead-in of the list of values and their runs where they differ)
MADE_WITH = (
    (
        "software",
        "Software of every run: {}.",
        "Software of the runs (several versions: each run is a run of the same settings and seed, but runs made with "
        "different versions are not bit-identical to each other):",
    ),
    (
        "engines",
        "Engine of every run: {}.",
        "Engines of the runs (each seed of a task is trained by one engine, so each paired comparison lies within one "
        "engine; the engines' runs are statistically, not bitwise, the same, and the section Engines checks that the "
        "effects agree):",
    ),
)


def made_with_lines(groups: dict[str, list[tuple[str, str, int]]], data: StudyData, one: str, several: str) -> list[str]:
    """``one`` filled in where every run shares a value; else ``several`` and each value with the runs that have it."""
    if not groups:
        return []
    if len(groups) == 1:
        return [one.format(next(iter(groups))), ""]
    lines = [several, ""]
    for value, keys in sorted(groups.items(), key=lambda item: -len(item[1])):
        lines.append(f"- {value}: {plural(len(keys), 'run')}, {runs_by_env_variant(keys, data)}")
    return [*lines, ""]


def runs_by_env_variant(keys: Iterable[tuple[str, str, int]], data: StudyData) -> str:
    """
    Runs named compactly: ``env variant (seeds 3, 4)`` once per (env, variant), ``all seeds`` where it is all, and
    ``env every variant (seeds 1, 2)`` where every variant of an env has the same seeds.
    """
    all_seeds = sorted(data.manifest.get("seeds", []))
    by_env: dict[str, dict[str, list[int]]] = {}
    for env, variant, seed in keys:
        by_env.setdefault(env, {}).setdefault(variant, []).append(seed)

    def which(seeds: Iterable[int]) -> str:
        seeds = sorted(seeds)
        return "all seeds" if seeds == all_seeds else ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(map(str, seeds))

    named = []
    for env, by_variant in sorted(by_env.items()):
        seed_sets = {tuple(sorted(seeds)) for seeds in by_variant.values()}
        if len(data.variants) > 1 and set(by_variant) == set(data.variants) and len(seed_sets) == 1:
            named.append(f"{env} every variant ({which(seed_sets.pop())})")
            continue
        named += [f"{env} {variant} ({which(seeds)})" for variant, seeds in sorted(by_variant.items())]
    return "; ".join(named)


def failures_section(data: StudyData) -> list[str]:
    if not data.failed and not data.missing:
        return []
    lines = ["## Failed and missing runs", ""]
    if data.failed:
        lines += ["| env | variant | seed | error |", "|---|---|---:|---|"]
        for record in sorted(data.failed, key=lambda r: (r["env"], r["variant"], r["seed"])):
            error = (record.get("error") or "unknown error").splitlines()[0].replace("|", "\\|")
            lines.append(f"| {record['env']} | {record['variant']} | {record['seed']} | {error} |")
        lines.append("")
    if data.missing:
        lines += [
            f"Missing (never finished): {runs_by_env_variant(data.missing, data)}.",
            "",
        ]
    lines += ["Rerun the study command to redo failed and missing runs; finished runs are kept.", ""]
    return lines
