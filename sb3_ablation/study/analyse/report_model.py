"""The report model: the types of every number, verdict, table row and figure's data that a study's report shows.

A report flows one way::

    store (load_study) -> analyse (analyse_study -> ReportModel) -> render (markdown, report.json, figures)

:func:`~sb3_ablation.study.analyse.analysis.analyse_study` computes the whole :class:`ReportModel` once;
:mod:`~sb3_ablation.study.render` only reads it (``render/`` imports types and constants from ``analyse/``, never a
function that computes), and :func:`~sb3_ablation.study.render.report_json.write_report_json` writes report.json from it, which
the README answer and the docs' results pages read.

This module holds only dataclasses (the types of the computing modules are imported for annotations only), so a
reader sees in one place what a report holds.

To add an analysis to the report:

1. give its result a type: a dataclass here (a type from a module that imports this one would close an import
   cycle, which tests/unit/test_layers.py forbids, ``TYPE_CHECKING`` or not);
2. add it as a new field of :class:`ReportModel` (or of :class:`EnvResult` for a per-task analysis) with a default
   (``None``, an empty list or dict), so every other constructor call keeps working;
3. compute it in :func:`~sb3_ablation.study.analyse.analysis.analyse_study` (or ``build_model`` for what the tuned arm
   needs too);
4. render it in ``study/render/`` (a section in :mod:`~sb3_ablation.study.render.extra_sections`, its part of report.json
   next to it), reading only the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.along_training import EnvAlongTraining
    from sb3_ablation.study.analyse.factorial import Attainable, FactorialResult
    from sb3_ablation.study.analyse.failures import EnvFailures
    from sb3_ablation.study.analyse.inference import Comparison
    from sb3_ablation.study.analyse.learning import EnvLearning, FactorialLearning
    from sb3_ablation.study.analyse.outcomes import OutcomeSpec
    from sb3_ablation.study.analyse.provenance import Provenance
    from sb3_ablation.study.analyse.results import StudyData
    from sb3_ablation.study.analyse.sequential import SequentialDecision
    from sb3_ablation.study.analyse.statistics import VariantStats
    from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, EarlierBudget, TaskReferences
    from sb3_ablation.study.plan.designs import Design


# ----------------------------------------------------------------------------------------------------------------------
# Per env: outcomes, margins, sequential looks
# ----------------------------------------------------------------------------------------------------------------------


#: how a margin reads where the plan makes no equivalence claims (``claims: differs``)
NO_MARGIN_PLANNED = "none planned: claims: differs, the plan makes no equivalence claims"


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


@dataclass(frozen=True)
class Looks:
    """
    The primary outcome's group-sequential analysis on one env.

    :param looks: the design's seed counts
    :param boundary: its alpha-spending boundary
    :param seed_order: the seeds in the order the looks take them (the baseline's, increasing)
    :param reached: how many looks the baseline's seeds reach
    :param decisions: per variant other than the baseline
    :param spent: the alpha spent by each look at the family's level
    :param nominal: per variant, each look's boundary as a nominal level
    """

    looks: tuple[int, ...]
    boundary: str
    seed_order: tuple[int, ...]
    reached: int
    decisions: dict[str, SequentialDecision]
    spent: tuple[float, ...] = ()
    nominal: dict[str, tuple[float, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class EarlierResult:
    """
    A hypothesis at an earlier budget of the same runs (the plan's ``earlier_budgets``), decided in the primary
    outcome's family.

    :param hypothesis: as the plan declares it
    :param name: how the report names it, e.g. ``no_delayed_policy_update at 300,000 steps (one-sided: ahead)``
    :param comparison: its paired comparison: the primary outcome from each run's evaluations up to the budget, the
        variant against the baseline on the same seeds, its p-value one-sided where the plan says so (the interval then
        a one-sided bound), adjusted over the family it joins
    """

    hypothesis: EarlierBudget
    name: str
    comparison: Comparison


@dataclass(frozen=True)
class EarlierBudgetEstimates:
    """
    Every arm at an earlier budget of the same runs (a budget of the plan's ``earlier_budgets``), described: each
    arm's mean of the primary outcome computed from its evaluations up to that budget, and each variant's paired
    estimate against the baseline with its two-sided 95% interval (the plan's test, not adjusted: an estimate, not a
    verdict; the declared hypotheses at this budget have theirs in :attr:`OutcomeResult.earlier`).

    :param budget: the earlier budget, in steps
    :param means: arm -> the mean over its seeds
    :param estimates: variant -> ``(n pairs, estimate, low, high)``
    """

    budget: int
    means: dict[str, float]
    estimates: dict[str, tuple[int, float, float, float]]


@dataclass
class OutcomeResult:
    """One outcome on one env: the family of variant-vs-baseline comparisons."""

    outcome: OutcomeSpec
    primary: bool
    stats: dict[str, VariantStats]  # per variant: IQM and mean with bootstrap CIs (effect sizes, not corrected)
    comparisons: dict[str, Comparison]  # per variant other than the baseline
    margin: Margin
    sequential: Looks | None = None  # the group-sequential design's looks, where the plan declares them
    # the smallest p-value an exact permutation test on the baseline's runs against a variant's could reach (NaN:
    # not computed); the report names it where the runs are too few for a claim
    min_permutation_p: float = float("nan")
    # where the env's variants form a factorial design: which verdicts this family of per-cell comparisons can reach
    # at its seeds (``None``: not a factorial)
    per_cell: Attainable | None = None
    # the plan's hypotheses at earlier budgets of the same runs, in this (the primary outcome's) family
    earlier: tuple[EarlierResult, ...] = ()
    # every arm at those budgets, described (estimates with 95% intervals, no verdicts)
    earlier_estimates: tuple[EarlierBudgetEstimates, ...] = ()


# ----------------------------------------------------------------------------------------------------------------------
# Per env: the figures' data
# ----------------------------------------------------------------------------------------------------------------------


@dataclass
class CurveEstimate:
    """A metric over training for one variant: the IQM over runs with its CI (``None`` with too few runs)."""

    timesteps: np.ndarray
    iqm: np.ndarray
    ci: np.ndarray | None  # (2, timesteps)
    per_run: np.ndarray  # (runs, timesteps)

    @property
    def n_runs(self) -> int:
        return int(self.per_run.shape[0])


@dataclass
class ProfileEstimate:
    """
    rliable's performance profile of the primary outcome: the fraction of runs above each threshold.

    :param taus: the thresholds
    :param profiles: variant -> fraction at each tau
    :param cis: variant -> (2, taus) stratified-bootstrap bands (``None``: too few runs of a variant)
    :param counts: runs per variant
    """

    taus: np.ndarray
    profiles: dict[str, np.ndarray]
    cis: dict[str, np.ndarray] | None
    counts: list[int]


@dataclass
class EnvFigures:
    """
    The data of one env's figures.

    :param shown: the variants the curves and the profile show (all, or the baseline and those that differ most)
    :param curve_reps: the bootstrap resamples of the curves' and the profile's bands
    :param curves: metric (``mean_return``, ``overestimation`` or a logged diagnostic) -> variant -> its curve
    :param profile: the primary outcome's performance profile (``None``: no runs)
    """

    shown: list[str]
    curve_reps: int
    curves: dict[str, dict[str, CurveEstimate]]
    profile: ProfileEstimate | None


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
    figures: EnvFigures | None = None  # the data of the env's figures (``None``: not computed, e.g. the tuned arm)

    def outcome(self, key: str) -> OutcomeResult | None:
        return next((o for o in self.outcomes if o.outcome.key == key), None)


# ----------------------------------------------------------------------------------------------------------------------
# The factorial analysis of an env whose variants form a 2^k design or a regular fraction
# ----------------------------------------------------------------------------------------------------------------------


@dataclass
class HalfNormalPoints:
    """Daniel's half-normal plot: the sorted absolute effects against half-normal quantiles, with their words."""

    quantiles: np.ndarray
    effects: np.ndarray
    words: list[str]


@dataclass
class FactorialOutcome:
    """
    One outcome of a factorial analysis.

    :param key: the outcome's key
    :param result: the effects with their verdicts (``None``: fewer than 2 seeds with a run in every cell)
    :param half_normal: the half-normal plot's points (the primary outcome only)
    :param per_cell: which verdicts the outcome's family of per-cell comparisons with the baseline can reach at its
        seeds (``None``: none tested)
    :param floor_labels: word -> what the verdict of a main effect or two-factor interaction must carry: no
        ``equivalent`` for an effect averaged over cells outside the learning region
        (:func:`~sb3_ablation.study.analyse.learning_region.floor_label`; ``None``: nothing; empty: no learning region
        computed)
    """

    key: str
    result: FactorialResult | None
    half_normal: HalfNormalPoints | None = None
    per_cell: Attainable | None = None
    floor_labels: dict[str, str | None] = field(default_factory=dict)


@dataclass
class EnvFactorial:
    """
    The factorial analysis of one env.

    :param env: the task
    :param design: the design the variants form
    :param outcomes: one per outcome of the env's result, in its order
    :param learning: where TD3 learns (:mod:`~sb3_ablation.study.analyse.learning`): the learning region, failure rates
        per effect, the effects within the region, the region's ceiling and the main effects' verdicts without an
        ``equivalent`` averaged over floor cells (``None``: not computed)
    """

    env: str
    design: Design
    outcomes: list[FactorialOutcome]
    learning: FactorialLearning | None = None


# ----------------------------------------------------------------------------------------------------------------------
# Across tasks (:mod:`~sb3_ablation.study.analyse.across`)
# ----------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetaResult:
    """
    :param estimate: the random-effects (DerSimonian-Laird) combined effect
    :param ci_low: lower end of its Hartung-Knapp (1 - alpha) interval, t on k - 1 degrees of freedom
    :param ci_high: upper end
    :param p: two-sided p-value of "combined effect = 0" (Hartung-Knapp t-test)
    :param tau2: DerSimonian-Laird between-task variance (truncated at 0)
    :param i2: share of the total variation due to heterogeneity, max(0, (Q - (k - 1)) / Q)
    :param q: Cochran's Q
    :param k: number of tasks
    """

    estimate: float
    ci_low: float
    ci_high: float
    p: float
    tau2: float
    i2: float
    q: float
    k: int


@dataclass(frozen=True)
class ComponentAcrossTasks:
    """
    :param variant: the variant compared with the baseline on every env
    :param effects: env -> (standardized effect, its variance, the env's verdict)
    :param meta: the random-effects combination (on the standardized scale)
    :param p_adjusted: Holm-adjusted p of the combined effect over the components
    :param p_heterogeneity: Cochran's Q test of "the same effect on every task"
    :param p_heterogeneity_adjusted: Holm-adjusted over the components
    """

    variant: str
    effects: dict[str, tuple[float, float, str]]
    meta: MetaResult
    p_adjusted: float
    p_heterogeneity: float
    p_heterogeneity_adjusted: float
    alpha: float

    @property
    def consistent(self) -> bool:
        """The combined effect differs from 0 (Holm) and the effect is not shown task-dependent."""
        return self.p_adjusted <= self.alpha and not self.task_dependent

    @property
    def task_dependent(self) -> bool:
        return self.p_heterogeneity_adjusted <= self.alpha

    @property
    def signs(self) -> str:
        """``same sign`` or ``opposite signs``: the direction of the per-task effects."""
        signs = {np.sign(d) for d, _, _ in self.effects.values() if d}
        return "opposite signs" if len(signs) > 1 else "same sign"


@dataclass
class Aggregate:
    how: str
    stats: dict[str, VariantStats]
    comparisons: dict[str, Comparison]
    margin: float
    scores: dict[str, np.ndarray]  # variant -> (seeds, envs) normalized primary outcome


@dataclass
class AcrossTasks:
    envs: list[str]
    seeds: list[int]
    components: list[ComponentAcrossTasks]
    aggregate: Aggregate | None


# ----------------------------------------------------------------------------------------------------------------------
# The engines' agreement (:mod:`~sb3_ablation.study.analyse.engine_check`)
# ----------------------------------------------------------------------------------------------------------------------


@dataclass
class EngineComparison:
    """
    One variant's effect on the seeds of another engine against those of the reference engine.

    :param variant: the variant (its paired differences with the baseline are compared)
    :param engine: the other engine
    :param reference_n: seeds of the reference engine with a paired difference
    :param n: seeds of the other engine with a paired difference
    :param reference_effect: mean paired difference over the reference engine's seeds (NaN: none)
    :param effect: mean paired difference over the other engine's seeds (NaN: none)
    :param difference: ``effect - reference_effect`` (NaN: not tested)
    :param ci: Welch's 95% interval of the difference (``None``: not tested)
    :param p: Welch's two-sided p-value (NaN: not tested)
    :param p_holm: Holm-adjusted over the task's tested variants (NaN: not tested)
    """

    variant: str
    engine: str
    reference_n: int
    n: int
    reference_effect: float
    effect: float
    difference: float = math.nan
    ci: tuple[float, float] | None = None
    p: float = math.nan
    p_holm: float = math.nan


@dataclass
class EnvEngineCheck:
    """
    :param env: the task
    :param outcome_key: the primary outcome's key (e.g. ``final_window``)
    :param outcome_name: its name as the report writes it
    :param comparisons: one per variant and other engine
    """

    env: str
    outcome_key: str
    outcome_name: str
    comparisons: list[EngineComparison]


@dataclass
class EngineCheck:
    """
    :param reference_engine: the engine of the study's smallest seed; the others are compared with it
    :param envs: one check per task, in the report's order
    """

    reference_engine: str
    envs: list[EnvEngineCheck]


# ----------------------------------------------------------------------------------------------------------------------
# Both answers of a study with per-variant tuning (:mod:`~sb3_ablation.study.analyse.tuning`)
# ----------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TunedComparison:
    """
    One variant's two answers on one env.

    :param variant: the variant
    :param default: against td3, both with the study's hyperparameters (``None``: no comparison)
    :param own: against td3, each with its own tuned hyperparameters (``None``: not run yet)
    :param recovered: ``1 - own.effect / default.effect`` (NaN: undefined, see ``recovered_note``)
    :param recovered_note: why it is undefined, or ""
    :param recovered_ci: the 95% percentile bootstrap interval of ``recovered`` over seeds (``None``: undefined)
    :param default_label: what an ``equivalent`` of ``default`` must carry
        (:func:`~sb3_ablation.study.analyse.learning.equivalence_label` of the study's runs; ``None``: none)
    :param own_label: the same of ``own`` (of the runs with each variant's own hyperparameters)
    """

    variant: str
    default: Comparison | None
    own: Comparison | None
    recovered: float
    recovered_note: str = ""
    recovered_ci: tuple[float, float] | None = None
    default_label: str | None = None
    own_label: str | None = None


@dataclass(frozen=True)
class EnvTuning:
    """
    :param env: the task
    :param outcome_key: the primary outcome's key
    :param outcome_name: its name as the report writes it
    :param comparisons: one per variant other than td3, in the study's order
    :param chosen: variant -> its tuning result as ``study.json`` records it (``hyperparams``, ``value``, ``trial``,
        ``trials``, ...)
    :param is_return: the outcome is in return units (``at ceiling`` labels only those)
    """

    env: str
    outcome_key: str
    outcome_name: str
    comparisons: list[TunedComparison]
    chosen: dict[str, dict[str, Any]] = field(default_factory=dict)
    is_return: bool = True


@dataclass(frozen=True)
class TuningComparison:
    """
    :param tuning: the study's ``tuning:`` section (search space, budget, tuning seeds)
    :param tuned_out: the nested study of the runs with each variant's own hyperparameters
    :param envs: one per env of the study's report
    """

    tuning: dict[str, Any]
    tuned_out: Path
    envs: list[EnvTuning]


# ----------------------------------------------------------------------------------------------------------------------
# The whole report
# ----------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanVersionVerdicts:
    """
    The verdict tables of a study under one version of its plan (the declared plan, or an amendment made after runs
    had finished), so that a report shows them side by side (:mod:`~sb3_ablation.study.analyse.amendments`).

    :param index: 0 for the declared plan, then 1, 2, ... for each amendment
    :param at: when this version was declared or amended (``None``: unknown)
    :param finished_runs: the runs finished then
    :param reason: why it was amended (``None``: the declared plan)
    :param changes: what it changed from the version before, one item per key (empty: the declared plan)
    :param plan: the plan of this version
    :param verdicts: env -> table (an outcome key, or ``factorial <outcome>``) -> row (a variant, or a factorial
        effect's name) -> ``(verdict, estimate)``
    """

    index: int
    at: str | None
    finished_runs: int | None
    reason: str | None
    changes: list[str]
    plan: AnalysisPlan
    verdicts: dict[str, dict[str, dict[str, tuple[str, float]]]]


#: where the results pages are in the repository
RESULTS_PAGES = "docs/results"


@dataclass(frozen=True)
class CommittedAnswer:
    """
    The committed study a task with too few seeds for a verdict points to
    (:func:`~sb3_ablation.study.analyse.committed.committed_answer` chooses it).

    :param study: the committed study's name (its folder)
    :param env: the task
    :param seeds: its seeds on the task
    :param training_steps: its training steps on the task
    :param decided: its comparisons on the task with a ``differs`` or ``equivalent``
    :param compared: of those it compares, how many
    """

    study: str
    env: str
    seeds: int
    training_steps: int | None
    decided: int
    compared: int

    @property
    def page(self) -> str:
        """The study's results page in the repository."""
        return f"{RESULTS_PAGES}/{self.study}.md"

    @property
    def report_json(self) -> str:
        """Its ``report.json`` as the package ships it."""
        return f"sb3_ablation/committed_studies/{self.study}/report.json"


@dataclass
class ReportModel:
    """
    Everything a study's report shows, computed by :func:`~sb3_ablation.study.analyse.analysis.analyse_study`.

    :param plan: the analysis plan the report follows
    :param declared: the plan stored in study.json before the runs (``None``: the study declared none)
    :param plan_changes: how the plan used differs from the declared one
    :param baseline: the variant every other is compared with
    :param variants: the variants with runs
    :param reps: bootstrap resamples of the IQM intervals
    :param seed: bootstrap and test seed
    :param envs: per env, its outcomes, verdicts, failures and figures' data
    :param across: the task-level meta-analysis across envs (``None``: one env)
    :param guarantee: the error control the verdicts hold to, in words
    :param declared_at: when the plan was declared, and how many runs had finished then
    :param replication: the runs of seeds outside the plan's confirmatory seeds, analysed on their own
    :param factorial: per env whose variants form a factorial design, its analysis
    :param engines: the engines' agreement, where the seeds come from more than one engine
    :param tuning: both answers of a study that tuned every variant for itself
    :param data: the loaded study (manifest, run status, warnings, failed runs), which the report shows as it is
    :param evaluations: the tidy table of every evaluation (:func:`~sb3_ablation.study.analyse.tidy.evaluation_rows`)
    :param learning: per env, the failure rules applied to every run, TD3's budget progress and each variant against
        the baseline in two parts (:mod:`~sb3_ablation.study.analyse.learning`; not rendered yet)
    :param provenance: the plan each record was made under and the runs reused from other studies
        (:mod:`~sb3_ablation.study.analyse.provenance`; ``None``: not computed)
    :param plan_versions: where the plan was amended after runs had finished, the verdicts under each version of it
        (:class:`PlanVersionVerdicts`; empty otherwise)
    :param along_training: per env, each comparison's return difference at every evaluation step with pointwise and
        simultaneous bands (:mod:`~sb3_ablation.study.analyse.along_training`; descriptive)
    :param committed_answers: per env with too few seeds for a verdict, the committed study that answers it
        (:mod:`~sb3_ablation.study.analyse.committed`; an env no committed study answers is left out)
    """

    plan: AnalysisPlan
    declared: AnalysisPlan | None
    plan_changes: list[str]
    baseline: str | None
    variants: list[str]
    reps: int
    seed: int
    envs: list[EnvResult]
    across: AcrossTasks | None
    guarantee: str
    declared_at: dict[str, Any] | None = None
    replication: list[EnvResult] | None = None
    factorial: list[EnvFactorial] = field(default_factory=list)
    engines: EngineCheck | None = None
    tuning: TuningComparison | None = None
    data: StudyData | None = None
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    learning: list[EnvLearning] = field(default_factory=list)
    provenance: Provenance | None = None
    plan_versions: list[PlanVersionVerdicts] = field(default_factory=list)
    along_training: list[EnvAlongTraining] = field(default_factory=list)
    committed_answers: dict[str, CommittedAnswer] = field(default_factory=dict)


__all__ = [
    "AcrossTasks",
    "Aggregate",
    "CommittedAnswer",
    "ComponentAcrossTasks",
    "CurveEstimate",
    "EngineCheck",
    "EngineComparison",
    "EnvEngineCheck",
    "EnvFactorial",
    "EnvFigures",
    "EnvResult",
    "EnvTuning",
    "FactorialOutcome",
    "HalfNormalPoints",
    "Looks",
    "Margin",
    "MetaResult",
    "OutcomeResult",
    "PlanVersionVerdicts",
    "ProfileEstimate",
    "ReportModel",
    "TunedComparison",
    "TuningComparison",
]
