"""A study from its settings to its report, above the five layers (it imports all of them): :func:`conduct` runs or
resumes it as ``sb3-ablation study`` does (plain, tuned, or in group-sequential looks), :func:`write_report` analyses
and renders it. Both are :mod:`sb3_ablation.study`'s names; the command line only parses arguments and prints."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sb3_ablation.study.analyse.report import analyse_study
from sb3_ablation.study.analyse.sequential import OPEN
from sb3_ablation.study.analyse.statistics import DEFAULT_REPS, DEFAULT_SEED
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.config import SeedList, StudyConfig, StudyError, command_defaults, load_config_file
from sb3_ablation.study.plan.variants import baseline_name
from sb3_ablation.study.render.report import render_report
from sb3_ablation.study.run.runner import StudyResult, run_study
from sb3_ablation.study.run.tuning import run_tuned_study
from sb3_ablation.study.store.manifest import MANIFEST_NAME, read_manifest

#: bootstrap replications of the analysis at each look (the looks' decisions use no bootstrap interval)
LOOK_REPS = 100


def conduct(config: StudyConfig | str | os.PathLike[str], log: Callable[[str], Any] = print, **settings: Any) -> StudyResult:
    """
    Run (or resume) a study as ``sb3-ablation study`` does: a study with a ``tuning:`` section tunes every variant and
    then runs both confirmatory studies (:func:`~sb3_ablation.study.run.tuning.run_tuned_study`); one whose declared
    plan has group-sequential looks runs its seeds in blocks up to each look and stops where the looks decide
    (:func:`run_looks`); any other runs every (env, variant, seed) (:func:`~sb3_ablation.study.run.runner.run_study`).
    Finished runs are skipped, so calling it again resumes.

    :param config: the study's settings, or a study file (a YAML path or a shipped study's name, as ``--config``)
    :param log: where progress lines go
    :param settings: settings that replace the file's (or the config's), as the command's flags do: ``out``,
        ``seeds``, ``workers``, ...; a file's study without ``variants``, ``seeds`` or ``out`` takes the command's
        defaults (:func:`~sb3_ablation.study.plan.config.command_defaults`)
    :return: what this call did (runs finished, skipped, failed)
    :raise StudyError: bad settings, or a folder made with other settings (one line)
    """
    if isinstance(config, StudyConfig):
        # (the parsed seeds as they are: a plain list of one seed would read as a count again)
        config = dataclasses.replace(config, **{"seeds": SeedList(config.seeds), **settings})
    else:
        config = StudyConfig(**{**command_defaults(), **load_config_file(config), **settings})
    if config.tuning:
        return run_tuned_study(config, log)
    if declared_plan(config).looks:
        return run_looks(config, log)
    return run_study(config, log)


def declared_plan(config: StudyConfig) -> AnalysisPlan:
    """The plan the study folder declared (``study.json``), else the one this study would declare."""
    if (Path(config.out) / MANIFEST_NAME).is_file() and (declared := read_manifest(config.out).get("analysis")):
        return AnalysisPlan.from_dict(declared)
    return AnalysisPlan.from_dict(config.analysis)


def run_looks(config: StudyConfig, log: Callable[[str], Any] = print) -> StudyResult:
    """
    A study whose plan declares group-sequential looks: the seeds in blocks up to each look (the study's seeds in
    increasing order), each block only for the baseline and the comparisons the looks so far have left open; after
    each block the looks are analysed, and the study stops when every comparison is decided.

    :param config: the study (its declared plan has ``looks``)
    :param log: where progress lines go (a failed block's line goes to stderr)
    :return: what the blocks did together
    :raise StudyError: no ``td3`` among the variants, or fewer seeds than the last look
    """
    plan = declared_plan(config)
    names = [variant.name for variant in config.variant_objects]
    baseline = baseline_name(names)
    seeds = sorted(plan.seeds or config.seeds)
    if baseline is None:
        raise StudyError(f"analysis.looks compares every variant with td3, which is not among the variants {names}")
    if len(seeds) < plan.looks[-1]:
        raise StudyError(
            f"analysis.looks ends at {plan.looks[-1]} seeds but the study has {len(seeds)} ({seeds}); "
            f"give at least {plan.looks[-1]} seeds"
        )
    total = StudyResult(out=str(config.out), total=0)
    still_open = {env: [v for v in names if v != baseline] for env in config.envs}
    for k, n in enumerate(plan.looks):
        by_open: dict[tuple[str, ...], list[str]] = {}
        for env, open_variants in still_open.items():
            if open_variants:
                by_open.setdefault(tuple(open_variants), []).append(env)
        for group, envs in by_open.items():
            log(f"look {k + 1} of {len(plan.looks)} ({n} seeds): {', '.join(envs)}: {baseline} and {len(group)} open")
            block = dataclasses.replace(config, envs=envs, variants=[baseline, *group], seeds=SeedList(seeds[:n]))
            total.add(run_study(block, log))
        if total.failed:
            print("failed runs: the look cannot be analysed; rerun the same command to retry them", file=sys.stderr)
            return total
        model = analyse_study(config.out, reps=LOOK_REPS)
        for e in model.envs:
            primary = e.outcome(model.plan.primary)
            if e.env in still_open and primary is not None and primary.sequential is not None:
                decisions = primary.sequential.decisions
                still_open[e.env] = [v for v in still_open[e.env] if decisions.get(v) and decisions[v].verdict == OPEN]
                closed = {v: d.verdict for v, d in decisions.items() if d.verdict != OPEN}
                log(f"look {k + 1}, {e.env}: {', '.join(f'{v} {d}' for v, d in closed.items()) or 'none decided'}")
        if not any(still_open.values()):
            break
    return total


def write_report(
    out: str | os.PathLike[str],
    reps: int | None = None,
    seed: int | None = None,
    baseline: str | None = None,
    **plan_changes: Any,
) -> Path:
    """
    Analyse a study (:func:`~sb3_ablation.study.analyse.report.analyse_study`) and render its report
    (:func:`~sb3_ablation.study.render.report.render_report`): ``<out>/report.md``, ``<out>/report.json``, the figures
    (``<out>/figures/*.png``) and the tidy table of the evaluations (``<out>/evaluations.csv``).

    :param out: the study folder
    :param reps: bootstrap replications of the IQM intervals (curves and profiles use at most 2,000; default 10,000)
    :param seed: bootstrap seed (default 0)
    :param baseline: variant to compare against (default ``td3``, or the study's first variant without it)
    :param plan_changes: changes to the declared analysis plan (``alpha``, ``primary``, ``margins``, ...)
    :return: the report's path
    """
    model = analyse_study(
        out, DEFAULT_REPS if reps is None else reps, DEFAULT_SEED if seed is None else seed, baseline, **plan_changes
    )
    return render_report(model, out)
