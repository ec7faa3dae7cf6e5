"""The analysis plan of a study: what the report tests, declared before the results are seen.

A plan names the primary outcome, the secondary outcomes, the family-wise level alpha, the power for the minimum
detectable effect, the fraction of training the primary outcome averages over, and the equivalence margin of each
env. It is set under ``analysis:`` in the study file (or left to the defaults), stored in ``study.json`` by the
study (the plan declared first stays there), and may be changed by ``sb3-ablation report`` flags; the report then
prints the plan it used and says where it differs from the declared one.

Outcomes (each a number per run, compared between variants by per-seed differences):

- ``final_window``: the mean return over the evaluations of the final ``final_fraction`` of training (the default
  primary outcome: one evaluation of 10 episodes is a noisy snapshot);
- ``last``: the mean return of the last evaluation;
- ``auc``: the area under the learning curve, normalised: the mean return over all evaluations;
- ``overestimation``: critic 1's overestimation at the last evaluation (the measure without the time-limit artifact
  where the records have it; else the old ``bias``, labelled with its artifact).

Families: one per env and outcome (the variant-vs-baseline comparisons), plus one per outcome for the aggregate across
envs. The equivalence margin of an env defaults to ``margin_fraction`` (10%) of full TD3's improvement over the
untrained policy (the step-0 evaluation) in the outcome's return units; ``margins`` overrides it per env.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

OUTCOMES = ("final_window", "last", "auc", "overestimation")


class PlanError(ValueError):
    """An analysis plan that cannot be used, reported as one line."""


@dataclass(frozen=True)
class AnalysisPlan:
    """
    :param primary: the primary outcome (one of :data:`OUTCOMES`)
    :param secondary: the secondary outcomes, reported with the same tests
    :param alpha: family-wise level of each family (Holm) and of the equivalence tests
    :param power: power of the minimum detectable effect and of the seeds needed
    :param final_fraction: the primary outcome ``final_window`` averages the evaluations at or after
        ``(1 - final_fraction)`` of training
    :param margin_fraction: default equivalence margin, as a fraction of TD3's improvement over the untrained policy
    :param margins: env id -> equivalence margin in return units, overriding the default
    """

    primary: str = "final_window"
    secondary: tuple[str, ...] = ("last", "auc", "overestimation")
    alpha: float = 0.05
    power: float = 0.8
    final_fraction: float = 0.1
    margin_fraction: float = 0.1
    margins: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in (self.primary, *self.secondary):
            if name not in OUTCOMES:
                raise PlanError(f"analysis: unknown outcome {name!r}; expected one of {', '.join(OUTCOMES)}")
        for name, value, low, high in (
            ("alpha", self.alpha, 0.0, 0.5),
            ("power", self.power, 0.0, 1.0),
            ("final_fraction", self.final_fraction, 0.0, 1.0),
            ("margin_fraction", self.margin_fraction, 0.0, 1.0),
        ):
            if not (isinstance(value, int | float) and low < value <= high):
                raise PlanError(f"analysis: {name} must be a number in ({low:g}, {high:g}], got {value!r}")
        for env, margin in self.margins.items():
            if not (isinstance(margin, int | float) and math.isfinite(margin) and margin > 0):
                raise PlanError(f"analysis: the margin of {env} must be a positive number, got {margin!r}")
        secondary = tuple(name for name in dict.fromkeys(self.secondary) if name != self.primary)
        object.__setattr__(self, "secondary", secondary)
        object.__setattr__(self, "margins", {str(env): float(m) for env, m in self.margins.items()})

    @property
    def outcomes(self) -> tuple[str, ...]:
        return (self.primary, *self.secondary)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "secondary": list(self.secondary), "margins": dict(self.margins)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> AnalysisPlan:
        """A plan from the ``analysis:`` mapping of a study file or ``study.json`` (missing keys: the defaults)."""
        values = dict(values or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise PlanError(f"analysis: unknown key {unknown[0]!r}; expected some of {', '.join(sorted(known))}")
        if isinstance(values.get("secondary"), str):
            values["secondary"] = [values["secondary"]]
        if "secondary" in values:
            values["secondary"] = tuple(values["secondary"] or ())
        if not isinstance(values.get("margins", {}), Mapping):
            raise PlanError(f"analysis: margins must map env ids to numbers, got {values['margins']!r}")
        return cls(**values)

    def with_overrides(self, **changes: Any) -> AnalysisPlan:
        """This plan with the given fields changed (``None``: unchanged); ``margins`` are merged per env."""
        changes = {key: value for key, value in changes.items() if value is not None}
        if "margins" in changes:
            changes["margins"] = {**self.margins, **changes["margins"]}
        return AnalysisPlan.from_dict({**self.to_dict(), **changes})

    def differences(self, other: AnalysisPlan) -> list[str]:
        """What differs from ``other``, one item per field: ``alpha 0.05 -> 0.1``."""
        mine, theirs = self.to_dict(), other.to_dict()
        return [f"{key} {theirs[key]} -> {mine[key]}" for key in mine if mine[key] != theirs[key]]


def parse_margins(items: list[str] | None) -> dict[str, float]:
    """``ENV=VALUE`` items of ``--margin`` as a mapping."""
    margins = {}
    for item in items or []:
        env, sep, value = item.partition("=")
        try:
            margins[env] = float(value) if sep and env else math.nan
        except ValueError:
            margins[env] = math.nan
        if not math.isfinite(margins[env]):
            raise PlanError(f"--margin {item!r}: expected ENV=VALUE with a number, e.g. Pendulum-v1=50")
    return margins
