"""Where runs execute, chosen by name (``StudyConfig.backend``): worker processes on this machine (``local``), or Ray
tasks on a cluster (``ray``). Both run an engine's units of work with its ``execute``
(:class:`~sb3_ablation.study.run.engines.Engine`) and hand each result to ``on_result`` as it arrives: which engine and
which backend are independent choices."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from typing import Any

import torch as th

from sb3_ablation.common.utils import plural
from sb3_ablation.study.plan.config import BACKENDS, StudyError


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# What every worker imports: the fork server imports it once and each worker is forked from it with these loaded (a
# spawned worker imported torch, its compiler front end, SB3 and rl_zoo3 itself: seconds of CPU per worker). torch._dynamo
# is imported by torch's optimizers when the first one is made.
WORKER_MODULES = ("__main__", "sb3_ablation.study.run.engines", "sb3_ablation.study.run.estimate", "torch._dynamo")


def _stop_with_the_driver() -> None:
    # a worker whose driver was killed (SIGKILL, OOM) stops instead of training on for nobody: the driver holds the
    # other end of the parent sentinel until it exits, with either start method
    parent = multiprocessing.parent_process()
    if parent is not None:
        parent.join()
    os._exit(1)


def _init_worker(environment: dict[str, str]) -> None:
    # the driver's environment as it is now (a worker forked from the fork server would otherwise have the server's)
    os.environ.clear()
    os.environ.update(environment)
    th.set_num_threads(1)
    # Ctrl-C goes to the whole process group: only the driver handles it (it stops the workers itself)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_stop_with_the_driver, daemon=True).start()


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """
    ``workers`` worker processes as a study starts them: forked from a fork server that has imported
    :data:`WORKER_MODULES` (``forkserver`` start method; ``spawn`` where there is none; never a fork of the driver:
    torch and ``fork`` do not mix well); the driver's environment; one torch thread each; Ctrl-C left to the driver;
    each stops when the driver is gone.

    :param workers: the processes
    """
    context: BaseContext
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(WORKER_MODULES))  # (read when the server starts: once per driver)
        # wait for the server to have imported them (a process that does nothing, forked from it): the workers are then
        # forked at once, so a study stopped while the server starts leaves no worker half made
        probe = context.Process(target=int)
        probe.start()
        probe.join()
    else:
        context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(dict(os.environ),))


def run_local(
    tasks: list[Any],
    workers: int,
    on_result: Callable[[Any], None],
    execute: Callable[[Any], Any],
    failed: Callable[[Any, str], Any],
) -> None:
    """
    Run tasks in ``workers`` processes (:func:`worker_pool`), one torch thread each. At most ``workers`` runs are in
    flight, so a worker that dies (BrokenProcessPool) costs exactly those: they are recorded as failed, a fresh pool
    takes over the rest.

    :param execute: what runs a task in a worker (a run; with the batched engine a group of runs)
    :param failed: the result of a task whose worker failed (``failed(task, error)``), handed to ``on_result``
    """
    pending = deque(tasks)
    while pending:
        pool = worker_pool(workers)
        in_flight: dict[Any, Any] = {}
        broken = False
        try:
            while (pending or in_flight) and not broken:
                while pending and len(in_flight) < workers:
                    task = pending.popleft()
                    in_flight[pool.submit(execute, task)] = task
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    task = in_flight.pop(future)
                    try:
                        record = future.result()
                    except BrokenProcessPool:
                        broken = True
                        record = failed(task, "worker process died (killed or out of memory) during this run")
                    except Exception as error:
                        record = failed(task, f"{type(error).__name__}: {error}")
                    on_result(record)
            for task in in_flight.values():  # a broken pool takes every run in flight with it
                on_result(failed(task, "worker process died (killed or out of memory) during this run"))
            in_flight.clear()
        except BaseException:
            # Ctrl-C or another driver error: stop the workers now rather than waiting for their runs to end
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def run_ray(
    tasks: list[Any],
    workers: int | None,
    address: str | None,
    on_result: Callable[[Any], None],
    execute: Callable[[Any], Any],
    failed: Callable[[Any, str], Any],
) -> None:
    """
    Run tasks as Ray tasks (one CPU each) on the cluster at ``address``, or on a local Ray started here with
    ``workers`` CPUs. The same ``execute`` as the local backend; records come back
    to this driver, which writes them, so workers need no shared file system.
    """
    try:  # Ray is optional (the [ray] extra)
        import ray
    except ImportError:
        raise StudyError("the ray backend needs Ray: pip install 'sb3-ablation[ray]'") from None

    started_here = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, logging_level=logging.WARNING)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, logging_level=logging.WARNING)
            started_here = True
    remote_run = ray.remote(num_cpus=1, max_retries=0)(execute)
    in_flight = {remote_run.remote(task): task for task in tasks}
    try:
        while in_flight:
            done, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in done:
                task = in_flight.pop(ref)
                try:
                    record = ray.get(ref)
                except Exception as error:  # RayTaskError, WorkerCrashedError, ...
                    record = failed(task, f"Ray task failed: {type(error).__name__}: {str(error).splitlines()[0]}")
                on_result(record)
    finally:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()


def _check_local() -> None:
    pass


def _check_ray() -> None:
    try:  # Ray is optional (the [ray] extra)
        import ray  # noqa: F401
    except ImportError:
        raise StudyError("--backend ray needs Ray, which is not installed: pip install 'sb3-ablation[ray]'") from None


def _local_where(workers: int, address: str | None) -> str:
    return plural(workers, "worker process", "worker processes")


def _ray_where(workers: int, address: str | None) -> str:
    return f"the Ray cluster at {address}" if address else f"a local Ray with {plural(workers, 'CPU')}"


def _run_local(
    units: list[Any],
    workers: int,
    address: str | None,  # no cluster: this machine
    on_result: Callable[[Any], None],
    execute: Callable[[Any], Any],
    failed: Callable[[Any, str], Any],
) -> None:
    run_local(units, workers, on_result, execute, failed)


@dataclass(frozen=True)
class Backend:
    """
    One place where a study's units of work run.

    :param name: ``StudyConfig.backend``
    :param check: raises a one-line :class:`StudyError` if the backend cannot run here (before anything is written)
    :param where: what the console says the runs run on, ``where(workers, address)``
    :param run: ``run(units, workers, address, on_result, execute, failed)``, as :func:`run_local` and :func:`run_ray`
    """

    name: str
    check: Callable[[], None]
    where: Callable[[int, str | None], str]
    run: Callable[..., None]


BY_NAME: dict[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend("local", _check_local, _local_where, _run_local),
        Backend("ray", _check_ray, _ray_where, run_ray),
    )
}
assert tuple(BY_NAME) == BACKENDS, "StudyConfig's backend names and their implementations differ"
