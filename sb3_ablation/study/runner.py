"""Running a study: one run per (env, variant, seed), in parallel processes or on Ray, resumable, nothing lost.

Each finished run is written atomically to ``<out>/runs/<env>/<variant>/seed_<k>.json`` as soon as it arrives, so an
interrupted study (Ctrl-C, a killed worker or driver) loses at most the runs in flight, and rerunning the same command
skips every run whose file says ``"status": "ok"``.
"""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sb3_ablation.study.config import StudyConfig, StudyError, check_envs, open_manifest, write_json_atomic
from sb3_ablation.study.variants import Variant

# the eval env's seed is offset from the training seed so the two never replay the same episodes
EVAL_SEED_OFFSET = 10_000
RUN_FILE_FORMAT = 1


def library_versions() -> dict[str, str]:
    """Versions of the libraries a run depends on, recorded with every run."""
    import gymnasium
    import stable_baselines3
    import torch

    import sb3_ablation

    return {
        "sb3_ablation": sb3_ablation.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "torch": torch.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


def safe_name(text: str) -> str:
    """A file-system-safe version of an env id or variant name (``module:Env-v0`` -> ``module_Env-v0``)."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text)


def run_path(out: str | os.PathLike, env_id: str, variant: str, seed: int) -> Path:
    return Path(out) / "runs" / safe_name(env_id) / safe_name(variant) / f"seed_{seed}.json"


def read_run(path: str | os.PathLike) -> dict | None:
    """A run file's record, or ``None`` when it is missing or unreadable (then the run is redone)."""
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, json.JSONDecodeError):
        return None


def _finite_or_none(value: Any) -> Any:
    """JSON has no NaN: store non-finite floats as null (read back as NaN by the report)."""
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    return value


# ----------------------------------------------------------------------------------------------------------------------
# One run (executed in a worker process or a Ray task; everything it needs travels in the task dict)
# ----------------------------------------------------------------------------------------------------------------------


def _make_vec_env(env_id: str, env_settings: dict[str, Any], seed: int, n_envs: int, max_episode_steps: int | None = None):
    """
    The training or evaluation env as rl-zoo builds it: Monitor, the zoo's env wrapper, its VecEnv wrapper,
    VecNormalize and frame stacking (``env_settings`` as returned by ``split_hyperparams``).
    """
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecFrameStack, VecNormalize

    env_kwargs = dict(env_settings.get("env_kwargs") or {})
    if max_episode_steps is not None:
        env_kwargs["max_episode_steps"] = max_episode_steps
    env = make_vec_env(
        env_id,
        n_envs=n_envs,
        seed=seed,
        env_kwargs=env_kwargs,
        wrapper_class=env_settings.get("env_wrapper"),
        monitor_kwargs=env_settings.get("monitor_kwargs") or None,
    )
    if env_settings.get("vec_env_wrapper") is not None:
        env = env_settings["vec_env_wrapper"](env)
    if env_settings.get("normalize"):
        env = VecNormalize(env, **(env_settings.get("normalize_kwargs") or {}))
    if env_settings.get("frame_stack"):
        env = VecFrameStack(env, int(env_settings["frame_stack"]))
    return env


def _eval_env_like(env_id: str, env_settings: dict[str, Any], seed: int, max_episode_steps: int | None):
    """An evaluation env wrapped like the training env; its VecNormalize (if any) is frozen and leaves rewards raw."""
    from stable_baselines3.common.vec_env import unwrap_vec_normalize

    settings = {**env_settings, "normalize_kwargs": {**(env_settings.get("normalize_kwargs") or {}), "norm_reward": False}}
    eval_env = _make_vec_env(env_id, settings, seed, n_envs=1, max_episode_steps=max_episode_steps)
    vec_normalize = unwrap_vec_normalize(eval_env)
    if vec_normalize is not None:
        # its statistics are copied from the training env at each evaluation (sync_envs_normalization)
        vec_normalize.training = False
    return eval_env


def execute_run(task: dict[str, Any]) -> dict[str, Any]:
    """
    Train and evaluate one (env, variant, seed). Never raises for a failing run: the record says ``"status":
    "failed"`` with the error and traceback, and keeps the evaluations made before the failure.

    :param task: see :func:`make_tasks`
    :return: the run record (JSON-ready)
    """
    import torch as th

    # one thread per run: parallel runs on separate cores instead of threads fighting over them
    th.set_num_threads(1)
    started = time.time()
    record: dict[str, Any] = {
        "format": RUN_FILE_FORMAT,
        "env": task["env"],
        "variant": task["variant"],
        "seed": task["seed"],
        "algo": task["algo"],
        "switches": task["switches"],
        "hyperparams": task["hyperparams"],
        "eval_freq": task["eval_freq"],
        "eval_episodes": task["eval_episodes"],
        "versions": library_versions(),
        "host": platform.node(),
        "status": "failed",
        "error": None,
        "traceback": None,
    }
    callback = None
    try:
        import gymnasium as gym

        from sb3_ablation.study.evaluation import OverestimationEvalCallback
        from sb3_ablation.zoo.hyperparams import ALGOS, split_hyperparams

        probe_env = gym.make(task["env"])
        try:
            model_kwargs, n_timesteps, env_settings = split_hyperparams(dict(task["hyperparams"]), probe_env)
        finally:
            probe_env.close()
        record["n_timesteps"] = n_timesteps
        seed = task["seed"]
        train_env = _make_vec_env(task["env"], env_settings, seed, n_envs=int(env_settings.get("n_envs", 1)))
        eval_env = _eval_env_like(task["env"], env_settings, seed + EVAL_SEED_OFFSET, task["eval_max_episode_steps"])
        eval_freq = task["eval_freq"] or max(1, n_timesteps // 20)
        record["eval_freq"] = eval_freq
        policy = model_kwargs.pop("policy", "MlpPolicy")
        model = ALGOS[task["algo"]](policy, train_env, seed=seed, device=task["device"], verbose=0, **model_kwargs)
        callback = OverestimationEvalCallback(eval_env, eval_freq=eval_freq, n_eval_episodes=task["eval_episodes"])
        model.learn(total_timesteps=n_timesteps, callback=callback)
        train_env.close()
        eval_env.close()
        record["status"] = "ok"
    except Exception as error:  # a failing run is recorded, never stops the study
        record["error"] = f"{type(error).__name__}: {error}"
        record["traceback"] = traceback.format_exc()
    record["evaluations"] = callback.history if callback is not None else {}
    record["wall_time_s"] = time.time() - started
    record["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return _finite_or_none(record)


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
        text = f"{self.total} runs in {self.out}: {self.skipped} already done, {self.ok} finished now"
        if self.failed:
            text += f", {len(self.failed)} failed (rerun the same command to retry them):\n  " + "\n  ".join(self.failed)
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
        write_json_atomic(run_path(config.out, record["env"], record["variant"], record["seed"]), record)
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


def iter_runs(out: str | os.PathLike) -> Iterable[dict]:
    """Every run record under ``<out>/runs``."""
    for path in sorted((Path(out) / "runs").glob("*/*/seed_*.json")):
        record = read_run(path)
        if record is not None:
            yield record
