"""Running a study: one run per (env, variant, seed), in parallel processes or on Ray, resumable, nothing lost.

Each finished run is written atomically to ``<out>/runs/<env>/<variant>/seed_<k>.json`` as soon as it arrives, so an
interrupted study (Ctrl-C, a killed worker or driver) loses at most the runs in flight, and rerunning the same command
skips every run whose file says ``"status": "ok"``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from sb3_ablation.study.backends import default_workers, failed_record, run_local, run_ray
from sb3_ablation.study.config import StudyConfig, check_envs, make_tasks, resolve_hyperparams
from sb3_ablation.study.execute import execute_run, library_versions
from sb3_ablation.study.store import iter_runs, open_manifest, read_run, run_path, safe_name, study_lock, write_run
from sb3_ablation.study.variants import Variant

# importable from here as before the split into plan (config), execute (execute, backends) and store
__all__ = [
    "StudyResult", "default_workers", "execute_run", "failed_record", "iter_runs", "library_versions", "make_tasks",
    "read_run", "resolve_hyperparams", "run_local", "run_path", "run_ray", "run_study", "safe_name",
]  # fmt: skip


@dataclass
class StudyResult:
    """What one invocation did."""

    out: str
    total: int
    skipped: int = 0
    ok: int = 0
    failed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        runs = Path(self.out) / "runs"
        text = f"{self.total} runs in {self.out}: {self.skipped} already done, {self.ok} finished now"
        text += f"\nrun records and final models: {runs}/<env>/<variant>/seed_<k>.json and .zip"
        if self.failed:
            text += f"\n{len(self.failed)} failed runs (their records say why; rerun the same command to retry them):"
            text += "".join(f"\n  {line}" for line in self.failed)
        return text


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
    with study_lock(config.out):
        return _run_locked(config, variants, resolved, log)


def _run_locked(
    config: StudyConfig, variants: list[Variant], resolved: dict[str, dict[str, dict]], log: Callable[[str], Any]
) -> StudyResult:
    open_manifest(config, resolved, library_versions())

    tasks = make_tasks(config, variants, resolved)
    for task in tasks:
        # the worker writes the record (and model, checkpoints) there; the driver writes it again on arrival
        task["record"] = str(run_path(config.out, task["env"], task["variant"], task["seed"]).resolve())
    result = StudyResult(out=str(config.out), total=len(tasks))
    pending = []
    for task in tasks:
        previous = read_run(run_path(config.out, task["env"], task["variant"], task["seed"]))
        if previous is not None and previous.get("status") == "ok":
            result.skipped += 1
        else:
            pending.append(task)
    if not pending:
        log(result.summary())
        return result

    n_runs, groups, execution = len(pending), "", {}
    if config.engine == "batched":
        from sb3_ablation.study.batched import execute_group, failed_group, make_groups

        pending = make_groups(pending)
        execution = {"execute": execute_group, "failed": failed_group}
        groups = f" in {len(pending)} batched groups"
    workers = min(config.workers or default_workers(), len(pending))
    # child processes (and a local Ray) inherit this: one OpenMP thread per run
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    if config.backend == "ray":
        where = f"the Ray cluster at {config.address}" if config.address else f"a local Ray with {workers} CPUs"
    else:
        where = f"{workers} worker processes"
    log(f"{n_runs} runs to do{groups} ({result.skipped} of {len(tasks)} already done) on {where}")
    progress = tqdm(
        total=len(tasks), initial=result.skipped, desc="runs", unit="run", disable=not config.progress, file=sys.stderr
    )

    def on_result(record: dict | list[dict]) -> None:
        if isinstance(record, list):  # a batched group's runs
            for run in record:
                on_result(run)
            return
        write_run(run_path(config.out, record["env"], record["variant"], record["seed"]), record)
        if record["status"] == "ok":
            result.ok += 1
        else:
            error = (record.get("error") or "unknown error").splitlines()[0]
            result.failed.append(f"{record['env']} {record['variant']} seed {record['seed']}: {error}")
            progress.write(f"run failed: {result.failed[-1]}")
        failed = f", {len(result.failed)} failed" if result.failed else ""
        progress.set_postfix_str(f"last: {record['variant']} seed {record['seed']}{failed}", refresh=False)
        progress.update(1)

    try:
        if config.backend == "ray":
            run_ray(pending, workers, config.address, on_result, **execution)
        else:
            run_local(pending, workers, on_result, **execution)
    finally:
        progress.close()
    log(result.summary())
    return result
