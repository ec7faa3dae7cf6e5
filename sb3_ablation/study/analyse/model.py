"""The report model's per-env parts: dataclasses of numbers and verdicts, rendered elsewhere (``study/render``)."""

from __future__ import annotations

from dataclasses import dataclass

from sb3_ablation.study.analyse.failures import EnvFailures
from sb3_ablation.study.analyse.inference import Comparison
from sb3_ablation.study.analyse.outcomes import OutcomeSpec
from sb3_ablation.study.analyse.statistics import VariantStats
from sb3_ablation.study.plan.analysis_plan import TaskReferences


@dataclass(frozen=True)
class Margin:
    """
    An equivalence margin in the three units a reader needs to judge it.

    :param value: in the outcome's units (``NaN``: none, no equivalence claim)
    :param how: where it comes from (never from the compared runs)
    :param seed_sds: the margin over the baseline's seed-to-seed SD of the outcome
    :param span_share: the margin over the task's reference span (random policy to the reference), return outcomes only
    """

    value: float
    how: str
    seed_sds: float
    span_share: float | None


@dataclass
class OutcomeResult:
    """One outcome on one env: the family of variant-vs-baseline comparisons."""

    outcome: OutcomeSpec
    primary: bool
    stats: dict[str, VariantStats]  # per variant: IQM and mean with bootstrap CIs (effect sizes, not corrected)
    comparisons: dict[str, Comparison]  # per variant other than the baseline
    margin: Margin


@dataclass
class EnvResult:
    env: str
    training_steps: int
    window: list[int]  # the evaluation timesteps the primary outcome averages
    untrained: float  # the baseline's mean return at the step-0 evaluation
    outcomes: list[OutcomeResult]
    failures: EnvFailures
    references: TaskReferences
    seeds: list[int]  # the seeds analysed (the plan's confirmatory seeds where it names them)

    def outcome(self, key: str) -> OutcomeResult | None:
        return next((o for o in self.outcomes if o.outcome.key == key), None)
