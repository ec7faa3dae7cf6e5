"""The rules that say where TD3 learns, declared before the runs and the same for every task: when a run did not learn,
when its critic diverged, which cells of a factorial form the learning region, and when a task is at its ceiling.

None of them is taken from the compared runs:

- *did not learn*: the run's final-window return is below the random policy's return, as this package measures it
  (:func:`random_return`: ``measured_random`` in ``references.yml``, from ``benchmarks/random_returns.py``), plus
  ``learning_fraction`` of the span from there to the reference at the paper's budget (:func:`paper_reference`, the
  longest budget in ``references.yml``);
- *critic diverged*: critic 1's |Q| at the last evaluation is beyond ``q_bound_factor`` times the largest |reward| of
  the run's own evaluation episodes divided by (1 - gamma), the most a discounted return of those rewards can be:
  no reference needed;
- *learning region* of a factorial: the cells with the components that make learning possible on, found from the
  failure outcome alone (the removal whose cells fail at a pooled rate of at least ``region_failure_rate``, repeatedly);
- *ceiling*: TD3 and the variants all within ``ceiling_fraction`` of the span below the paper's reference, and their
  means within that distance of each other.

They are the analysis plan's ``learning`` (:class:`~sb3_ablation.study.plan.analysis_plan.AnalysisPlan`): a study
declared now declares them in ``study.json`` (their defaults, or what its study file sets under ``analysis.learning``),
so they are covered by the plan's digest and fixed before the runs. A plan declared before they were plan fields has
no ``learning`` (its ``to_dict``, digest and report stay as they were): its report applies these defaults and says
they were not declared before the runs. :class:`LearningRules` is defined with the plan
(:mod:`~sb3_ablation.study.plan.analysis_plan`) and imported from here.
"""

from __future__ import annotations

from sb3_ablation.study.plan.analysis_plan import LearningRules, reference_entry


def random_return(env: str) -> tuple[float, str] | None:
    """
    The random policy's return of ``env`` as this package measured it (``measured_random`` in ``references.yml``, else
    ``random`` where that was measured by ``benchmarks/random_returns.py``), and its source; ``None``: not measured.
    """
    entry = reference_entry(env)
    for key in ("measured_random", "random"):
        item = entry.get(key) or {}
        if item.get("return") is not None and "random_returns.py" in str(item.get("source", "")):
            return float(item["return"]), str(item["source"])
    return None


def paper_reference(env: str) -> tuple[int, float, str] | None:
    """``(budget, return, source)`` of the reference at the paper's budget (the longest in ``references.yml``)."""
    references = reference_entry(env).get("references") or []
    longest = max(references, key=lambda r: r["budget"], default=None)
    if longest is None:
        return None
    return int(longest["budget"]), float(longest["return"]), str(longest.get("source", ""))


def learning_threshold(env: str, rules: LearningRules) -> tuple[float | None, str]:
    """
    The final-window return below which a run of ``env`` did not learn (:class:`LearningRules`), and how it was set;
    ``None`` where the task has no measured random return or no reference.
    """
    measured, reference = random_return(env), paper_reference(env)
    if measured is None or reference is None:
        missing = "measured random return" if measured is None else "reference return"
        return None, f"none: {env} has no {missing} in references.yml; declare a failure return"
    random_value, (budget, reference_value, _) = measured[0], reference
    threshold = random_value + rules.learning_fraction * (reference_value - random_value)
    return threshold, (
        f"the random policy's return ({random_value:,.1f}, measured) plus {rules.learning_fraction:.0%} of the span to "
        f"the reference at {budget:,} steps ({reference_value:,.1f})"
    )


__all__ = ["LearningRules", "learning_threshold", "paper_reference", "random_return"]
