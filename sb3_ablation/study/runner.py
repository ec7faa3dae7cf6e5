"""Running a study: one run per (env, variant, seed), in parallel processes or on Ray, resumable, nothing lost.

Each finished run is written atomically to ``<out>/runs/<env>/<variant>/seed_<k>.json`` as soon as it arrives, so an
interrupted study (Ctrl-C, a killed worker or driver) loses at most the runs in flight, and rerunning the same command
skips every run whose file says ``"status": "ok"``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from sb3_ablation.study.config import StudyConfig, StudyError, check_envs, open_manifest
from sb3_ablation.study.execute import execute_run, library_versions
from sb3_ablation.study.store import RUN_FILE_FORMAT, iter_runs, read_run, run_path, safe_name, study_lock, write_run
from sb3_ablation.study.variants import Variant

# moved to sb3_ablation.study.execute / store; importable from here as before
__all__ = ["execute_run", "iter_runs", "library_versions", "read_run", "run_path", "run_study", "safe_name"]


def failed_record(task: dict[str, Any], error: str) -> dict[str, Any]:
    """The record of a run that never returned (its worker died)."""
    fields = ("env", "variant", "seed", "algo", "switches", "hyperparams", "eval_freq", "eval_episodes")
    return {
        "format": RUN_FILE_FORMAT,
        **{key: task[key] for key in fields},
        "status": "failed",
        "error": error,
        "traceback": None,
        "evaluations": {},
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# ----------------------------------------------------------------------------------------------------------------------
# Backends
# ----------------------------------------------------------------------------------------------------------------------


def _watch_parent(parent_pid: int) -> None:
    # a worker whose driver was killed (SIGKILL, OOM) stops instead of training on for nobody
    while True:
        time.sleep(2.0)
        if os.getppid() != parent_pid:
            os._exit(1)


def _init_worker(parent_pid: int) -> None:
    import torch as th

    th.set_num_threads(1)
    # Ctrl-C goes to the whole process group: only the driver handles it (it stops the workers itself)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()


def run_local(tasks: list[dict], workers: int, on_result: Callable[[dict], None]) -> None:
    """
    Run tasks in ``workers`` processes (``spawn`` start method: torch and ``fork`` do not mix well), one torch thread
    each. At most ``workers`` runs are in flight, so a worker that dies (BrokenProcessPool) costs exactly those: they
    are recorded as failed, a fresh pool takes over the rest.
    """
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    pending = deque(tasks)
    while pending:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(os.getpid(),))
        in_flight: dict[Any, dict] = {}
        broken = False
        try:
            while (pending or in_flight) and not broken:
                while pending and len(in_flight) < workers:
                    task = pending.popleft()
                    in_flight[pool.submit(execute_run, task)] = task
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    task = in_flight.pop(future)
                    try:
                        record = future.result()
                    except BrokenProcessPool:
                        broken = True
                        record = failed_record(task, "worker process died (killed or out of memory) during this run")
                    except Exception as error:
                        record = failed_record(task, f"{type(error).__name__}: {error}")
                    on_result(record)
            for task in in_flight.values():  # a broken pool takes every run in flight with it
                on_result(failed_record(task, "worker process died (killed or out of memory) during this run"))
            in_flight.clear()
        except BaseException:
            # Ctrl-C or another driver error: stop the workers now rather than waiting for their runs to end
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def run_ray(tasks: list[dict], workers: int | None, address: str | None, on_result: Callable[[dict], None]) -> None:
    """
    Run tasks as Ray tasks (one CPU each) on the cluster at ``address``, or on a local Ray started here with
    ``workers`` CPUs. The same :func:`execute_run` as the local backend; records come back to this driver, which
    writes them, so workers need no shared file system.
    """
    try:
        import ray
    except ImportError:
        raise StudyError("the ray backend needs Ray: pip install 'sb3-ablation[ray]'") from None
    import logging

    started_here = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, logging_level=logging.WARNING)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, logging_level=logging.WARNING)
            started_here = True
    remote_run = ray.remote(num_cpus=1, max_retries=0)(execute_run)
    in_flight = {remote_run.remote(task): task for task in tasks}
    try:
        while in_flight:
            done, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in done:
                task = in_flight.pop(ref)
                try:
                    record = ray.get(ref)
                except Exception as error:  # RayTaskError, WorkerCrashedError, ...
                    record = failed_record(task, f"Ray task failed: {type(error).__name__}: {str(error).splitlines()[0]}")
                on_result(record)
    finally:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()


# ----------------------------------------------------------------------------------------------------------------------
# The study
# ----------------------------------------------------------------------------------------------------------------------


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


def resolve_hyperparams(config: StudyConfig, variants: list[Variant]) -> dict[str, dict[str, dict]]:
    """``{env_id: {algo: zoo hyperparameters with the study's overrides}}`` for every env and algorithm of the study."""
    from sb3_ablation import SWITCHES
    from sb3_ablation.zoo.hyperparams import load_hyperparams

    for env_id in config.envs:
        switch_keys = sorted(set(config.overrides_for(env_id)) & set(SWITCHES))
        if switch_keys:
            raise StudyError(f"switches are chosen by the variants, not by hyperparameters: remove {', '.join(switch_keys)}")
    resolved: dict[str, dict[str, dict]] = {}
    for env_id in config.envs:
        for algo in dict.fromkeys(variant.algo for variant in variants):
            try:
                resolved.setdefault(env_id, {})[algo] = load_hyperparams(
                    algo, env_id.rpartition(":")[2], overrides=config.overrides_for(env_id)
                )
            except (KeyError, ValueError, TypeError) as error:
                raise StudyError(f"hyperparameters of {algo} on {env_id}: {error}") from None
    return resolved


def make_tasks(config: StudyConfig, variants: list[Variant], resolved: dict[str, dict[str, dict]]) -> list[dict[str, Any]]:
    """One task per (env, variant, seed), seeds outermost so the first results cover every variant."""
    return [
        {
            "env": env_id,
            "variant": variant.name,
            "seed": seed,
            "algo": variant.algo,
            "switches": dict(variant.switches),
            # the switches are ordinary zoo hyperparameters of ablatable_td3
            "hyperparams": {**resolved[env_id][variant.algo], **variant.switches},
            "eval_freq": config.eval_freq,
            "eval_episodes": config.eval_episodes,
            "eval_max_episode_steps": config.eval_max_episode_steps,
            "device": config.device,
            "checkpoint_freq": config.checkpoint_freq,
            # the worker writes the record (and model, checkpoints) here; the driver writes it again on arrival
            "record": str(run_path(config.out, env_id, variant.name, seed).resolve()),
        }
        for seed in config.seeds
        for env_id in config.envs
        for variant in variants
    ]


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


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

    workers = min(config.workers or default_workers(), len(pending))
    # child processes (and a local Ray) inherit this: one OpenMP thread per run
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    if config.backend == "ray":
        where = f"the Ray cluster at {config.address}" if config.address else f"a local Ray with {workers} CPUs"
    else:
        where = f"{workers} worker processes"
    log(f"{len(pending)} runs to do ({result.skipped} of {len(tasks)} already done) on {where}")
    progress = tqdm(
        total=len(tasks), initial=result.skipped, desc="runs", unit="run", disable=not config.progress, file=sys.stderr
    )

    def on_result(record: dict) -> None:
        write_run(run_path(config.out, record["env"], record["variant"], record["seed"]), record)
        if record["status"] == "ok":
            result.ok += 1
        else:
            error = (record.get("error") or "unknown error").splitlines()[0]
            result.failed.append(f"{record['env']} {record['variant']} seed {record['seed']}: {error}")
            progress.write(f"run failed: {result.failed[-1]}")
        progress.update(1)

    try:
        if config.backend == "ray":
            run_ray(pending, workers, config.address, on_result)
        else:
            run_local(pending, workers, on_result)
    finally:
        progress.close()
    log(result.summary())
    return result
