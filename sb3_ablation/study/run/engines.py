"""How a study's pending runs are trained, chosen by name (``StudyConfig.engine``) and run by a backend (local worker
processes or Ray, :mod:`~sb3_ablation.study.run.backends`) that knows nothing of them but their :class:`Engine`.

- ``process``: each run in its own process (:func:`~sb3_ablation.study.run.execute.execute_run`);
- ``batched``: the seeds of one (env, variant) trained together by one BatchedTD3 in one process
  (:func:`~sb3_ablation.study.run.batched.execute_group`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sb3_ablation.study.plan.records import RunTask, failed_record
from sb3_ablation.study.run.batched import execute_group, failed_group, make_groups
from sb3_ablation.study.run.execute import execute_run


@dataclass(frozen=True)
class Engine:
    """
    One way of training a study's runs: its units of work, what trains one unit in a worker and what a unit whose
    worker died leaves (each a run record as written, or a list of them).

    :param name: ``StudyConfig.engine``
    :param units: the units of work of the pending tasks
    :param execute: trains one unit (in a worker process or a Ray task: a module-level function, picklable)
    :param failed: the records of a unit whose worker died, ``failed(unit, error)``
    :param unit_name: what a unit is called on the console (``None``: a run)
    """

    name: str
    units: Callable[[list[RunTask]], list[Any]]
    execute: Callable[[Any], Any]
    failed: Callable[[Any, str], Any]
    unit_name: str | None = None

    def describe(self, units: list[Any]) -> str:
        """`` in 3 batched groups`` (nothing for an engine whose units are runs)."""
        return f" in {len(units)} {self.unit_name}s" if self.unit_name else ""


def _each_run(tasks: list[RunTask]) -> list[RunTask]:
    return list(tasks)


ENGINES: dict[str, Engine] = {
    engine.name: engine
    for engine in (
        Engine("process", _each_run, execute_run, failed_record),
        Engine("batched", make_groups, execute_group, failed_group, unit_name="batched group"),
        Engine("batched-compiled", make_groups, execute_group, failed_group, unit_name="batched group"),
    )
}
