"""Running a study: one run per (env, variant, seed), in parallel processes or on Ray, resumable, nothing lost.

Each finished run is written atomically to its record (:func:`~sb3_ablation.study.store.runs.run_path`) as soon as it
arrives, so an interrupted study (Ctrl-C, a killed worker or driver) loses at most the runs in flight, and rerunning
the same command skips every run whose record says ``"status": "ok"``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from sb3_ablation.common.utils import plural
from sb3_ablation.study.plan.config import (
    BATCHED_ENGINES,
    StudyConfig,
    StudyError,
    check_envs,
    make_tasks,
    resolve_hyperparams,
)
from sb3_ablation.study.plan.designs import DESIGN_NAMES
from sb3_ablation.study.plan.variants import Variant
from sb3_ablation.study.run.backends import BY_NAME as BACKENDS
from sb3_ablation.study.run.backends import default_workers
from sb3_ablation.study.run.batched import default_group_size
from sb3_ablation.study.run.engines import ENGINES
from sb3_ablation.study.run.recording import library_versions
from sb3_ablation.study.store.checkpoints import RunCheckpoints
from sb3_ablation.study.store.lock import study_lock
from sb3_ablation.study.store.manifest import check_seed_engines, open_manifest, plan_in_force_digest
from sb3_ablation.study.store.runs import RECORD_PATTERN, read_run, run_path, write_run


@dataclass
class StudyResult:
    """What one invocation did."""

    out: str
    total: int
    skipped: int = 0
    ok: int = 0
    failed: list[str] = field(default_factory=list)
    #: runs of this invocation that raised warnings
    warned: int = 0

    def add(self, other: StudyResult) -> None:
        """Count another invocation's runs in this one (a study run in parts: blocks of seeds, or two arms)."""
        self.total += other.total
        self.skipped += other.skipped
        self.ok += other.ok
        self.warned += other.warned
        self.failed += other.failed

    def summary(self) -> str:
        text = f"{plural(self.total, 'run')} in {self.out}: {self.skipped} already done, {self.ok} finished now"
        text += f"\nrun records: {Path(self.out) / RECORD_PATTERN}"
        if self.warned:
            text += (
                f"\n{plural(self.warned, 'run')} raised warnings: `sb3-ablation report {self.out}` lists them "
                "(and each record's 'warnings')"
            )
        if self.failed:
            text += (
                f"\n{plural(len(self.failed), 'failed run')} (their records say why; rerun the same command to retry them):"
            )
            text += "".join(f"\n  {line}" for line in self.failed)
        return text


def check_before_writing(config: StudyConfig, variants: list[Variant], resolved: dict[str, dict[str, dict]]) -> None:
    """
    What would otherwise fail only once the output folder exists: an algorithm that cannot act in an env, or the Ray
    backend without Ray.

    :raise StudyError: one line naming the problem
    """
    # rl_zoo3 (heavy) is not imported with this module: `study` imports it before check_envs' one-line errors
    from sb3_ablation.zoo.hyperparams import ZooConfigError, check_action_space

    for env_id in config.envs:
        for algo in dict.fromkeys(variant.algo for variant in variants):
            try:
                check_action_space(algo, env_id, resolved[env_id][algo].get("env_kwargs"))
            except ZooConfigError as error:
                raise StudyError(str(error)) from None
    BACKENDS[config.backend].check()


def run_study(config: StudyConfig, log: Callable[[str], Any] = print) -> StudyResult:
    """
    Run (or resume) a study.

    :param config: the settings
    :param log: where one-line messages go
    :return: counts of skipped, finished and failed runs
    :raises StudyError: bad settings, or an output folder made with different settings
    """
    check_envs(config.envs)
    variants = config.variant_objects
    resolved = resolve_hyperparams(config, variants)
    check_before_writing(config, variants, resolved)
    with study_lock(config.out):
        return _run_locked(config, variants, resolved, log)


def _run_locked(
    config: StudyConfig, variants: list[Variant], resolved: dict[str, dict[str, dict]], log: Callable[[str], Any]
) -> StudyResult:
    tasks = make_tasks(config, variants, resolved)
    for task in tasks:
        # the worker writes the record (and model, checkpoints) there; the driver writes it again on arrival
        task.record = str(run_path(config.out, task.env, task.variant, task.seed).resolve())
    result = StudyResult(out=str(config.out), total=len(tasks))
    pending = []
    for task in tasks:
        path = run_path(config.out, task.env, task.variant, task.seed)
        previous = read_run(path)
        if previous is not None and previous.get("status") == "ok":
            result.skipped += 1
        else:
            if previous is None and path.exists():
                log(f"run record {path} is unreadable; the run is done again")
            pending.append(task)
    # both checks come before anything is written
    check_seed_engines(config.out, ((task.env, task.seed) for task in pending), config.engine)
    manifest = open_manifest(config, resolved, library_versions())
    digest = plan_in_force_digest(manifest)
    for task in pending:  # every record carries the digest of the plan it is made under
        task.plan_digest = digest
    if not pending:
        log(result.summary())
        return result

    checkpointed = sum(task.record is not None and RunCheckpoints(task.record).latest() is not None for task in pending)
    engine = ENGINES[config.engine]
    if config.engine in BATCHED_ENGINES and config.group_size is None:
        design = any(spec.split(":")[0] in DESIGN_NAMES for spec in config.variants)
        size = default_group_size(tasks, design)
        for task in pending:
            task.group_size = size
    units = engine.units(pending)
    workers = min(config.workers or default_workers(), len(units))
    # child processes (and a local Ray) inherit this: one OpenMP thread per run
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    backend = BACKENDS[config.backend]
    where = backend.where(workers, config.address)
    done = f"{result.skipped} of {len(tasks)} already done"
    log(f"{plural(len(pending), 'run')} to do{engine.describe(units)} ({done}) on {where}")
    if checkpointed and config.verbose >= 1:
        log(f"{plural(checkpointed, 'run')} will resume from {'its' if checkpointed == 1 else 'their'} last checkpoint")
    progress = tqdm(
        total=len(tasks), initial=result.skipped, desc="runs", unit="run", disable=not config.progress, file=sys.stderr
    )

    def on_result(record: dict | list[dict]) -> None:
        if isinstance(record, list):  # a batched group's runs
            for run in record:
                on_result(run)
            return
        write_run(run_path(config.out, record["env"], record["variant"], record["seed"]), record)
        name = f"{record['env']} {record['variant']} seed {record['seed']}"
        result.warned += bool(record.get("warnings"))
        if record.get("resumed_from") and config.verbose >= 1:
            progress.write(f"run resumed from its checkpoint at step {record['resumed_from']}: {name}")
        if record["status"] == "ok":
            result.ok += 1
            if config.verbose >= 2:
                progress.write(f"run finished: {name} ({len(record.get('warnings') or [])} warnings)")
        else:
            error = (record.get("error") or "unknown error").splitlines()[0]
            result.failed.append(f"{name}: {error}")
            if config.verbose >= 1:
                progress.write(f"run failed: {result.failed[-1]}")
        failed = f", {len(result.failed)} failed" if result.failed else ""
        progress.set_postfix_str(f"last: {record['variant']} seed {record['seed']}{failed}", refresh=False)
        progress.update(1)

    try:
        backend.run(units, workers, config.address, on_result, engine.execute, engine.failed)
    finally:
        progress.close()
    log(result.summary())
    return result
