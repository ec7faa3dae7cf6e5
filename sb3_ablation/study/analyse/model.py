"""The report model's per-env parts: dataclasses of numbers and verdicts, rendered elsewhere (``study/render``)."""

from __future__ import annotations

from dataclasses import dataclass

from sb3_ablation.study.analyse.failures import EnvFailures
from sb3_ablation.study.analyse.inference import Comparison
from sb3_ablation.study.analyse.outcomes import OutcomeSpec
from sb3_ablation.study.analyse.sequential import SequentialDecision
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
    sequential: Looks | None = None  # the group-sequential design's looks, where the plan declares them


@dataclass(frozen=True)
class Looks:
    """
    The primary outcome's group-sequential analysis on one env.

    :param looks: the design's seed counts
    :param boundary: its alpha-spending boundary
    :param seed_order: the seeds in the order the looks take them (the baseline's, increasing)
    :param reached: how many looks the baseline's seeds reach
    :param decisions: per variant other than the baseline
    """

    looks: tuple[int, ...]
    boundary: str
    seed_order: tuple[int, ...]
    reached: int
    decisions: dict[str, SequentialDecision]


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
