"""The analysis plan of a study: what the report tests and how, declared before the runs.

A plan names the outcomes, the family-wise level alpha, the power of the minimum detectable effect, the fraction of
training the primary outcome averages over, the paired test, the equivalence margins, the failure rule and the
sequential design. The study writes it into ``study.json`` when it creates the folder (from the study file's
``analysis:``, flags or these defaults), with the date and whether any run had finished then; ``sb3-ablation report``
follows it, and a plan changed afterwards is reported as a deviation.

Outcomes (each a number per run, compared between variants by per-seed differences):

- ``final_window``: the mean return over the evaluations of the final ``final_fraction`` of training (the default
  primary outcome: one evaluation of 10 episodes is a noisy snapshot);
- ``last``: the mean return of the last evaluation;
- ``auc``: the area under the learning curve, normalised: the mean return over all evaluations;
- ``overestimation``: critic 1's overestimation at the last evaluation.

Margins and failures are anchored outside the results (:func:`task_references`, ``references.yml``): the span from
a uniform-random policy's return to a published reference return at the study's budget. The default equivalence
margin is ``reference_fraction`` of that span; a run "did not learn" when its final-window return is below the
random return plus ``failure_fraction`` of the span. ``margins`` and ``failure_returns`` set them in return units
instead (for a task or budget without a reference). Rescaling or shifting a study's trained returns never changes a margin.

Sequential design: ``looks`` (e.g. ``[5, 10, 20]`` seeds) with ``boundary`` O'Brien-Fleming or Pocock alpha spending;
empty: one analysis at the planned seeds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from sb3_ablation.common.suggestions import did_you_mean, quoted_with_suggestion

OUTCOMES = ("final_window", "last", "auc", "overestimation")
#: the names of the paired tests a plan can take: those of the registry
#: (:data:`sb3_ablation.study.analyse.paired_methods.PAIRED_TESTS`, one row per test), named here because the plan is
#: checked before the analysis (and scipy) is imported; ``tests/unit/test_inference.py`` checks they are the registry's
TESTS = ("t", "wilcoxon", "signflip", "signflip_trimmed", "bootstrap_t", "bootstrap_percentile")
#: the default of the committed calibration table (docs/calibration.json; a test checks they agree)
DEFAULT_TEST = "wilcoxon"
#: the default equivalence procedure: TOST with the sign-flip test of the mean, which failures pull down, so a variant
#: that fails more often than the baseline is not called equivalent (docs/calibration.md, equivalence table)
DEFAULT_EQUIVALENCE_TEST = "signflip"
BOUNDARIES = ("obrien-fleming", "pocock")
#: how a comparison's two claims share the family's alpha: ``differs-and-equivalent`` (both claims, Shaffer's step-down
#: over the family's 2m hypotheses; the rule of every plan declared without ``claims``), ``differs`` (no equivalence
#: claims: only "no difference" is tested, and the family's alpha goes to it alone) or ``partitioned`` (both claims,
#: each tested at its comparison's share of alpha: their null hypotheses are disjoint, the partitioning principle;
#: group-sequential looks spend that share)
CLAIMS = ("differs-and-equivalent", "differs", "partitioned")
#: the rule a plan declared with a new study gets when its study file names none (plans declared before it keep theirs)
DEFAULT_CLAIMS = "partitioned"
#: the alternatives a hypothesis at an earlier budget may declare: the variant's outcome minus the baseline's is
#: nonzero (two-sided), above 0 (greater) or below 0 (less)
ALTERNATIVES = ("two-sided", "greater", "less")
REFERENCES_FILE = Path(__file__).with_name("references.yml")


class PlanError(ValueError):
    """An analysis plan that cannot be used, reported as one line."""


@dataclass(frozen=True)
class EarlierBudget:
    """
    A confirmatory hypothesis at an earlier budget of the same runs: the primary outcome computed from each run's
    evaluations up to ``budget`` steps, as if the run had ended there (its final window: the evaluations at or after
    ``(1 - final_fraction) * budget``), one variant against the baseline, in the same family as the comparisons at the
    study's full budget. A run's evaluations up to a step do not depend on its total budget
    (tests/integration/test_budget_independence.py), so these windows are those of a study at ``budget`` steps.

    :param budget: the earlier budget, in training steps (below the study's ``n_timesteps``)
    :param variant: the variant compared with the baseline there
    :param alternative: one of :data:`ALTERNATIVES`; a one-sided alternative must have been stated before the runs
        (the plan is declared before any record), from data outside the study's seeds
    """

    budget: int
    variant: str
    alternative: str = "two-sided"

    def __post_init__(self) -> None:
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 1:
            raise PlanError(f"analysis: earlier_budgets: budget must be a positive integer, got {self.budget!r}")
        if not isinstance(self.variant, str) or not self.variant:
            raise PlanError(f"analysis: earlier_budgets: variant must be a variant's name, got {self.variant!r}")
        if self.alternative not in ALTERNATIVES:
            raise PlanError(
                f"analysis: earlier_budgets: unknown alternative {self.alternative!r}; expected one of "
                f"{', '.join(ALTERNATIVES)}"
            )

    @classmethod
    def from_dict(cls, values: Any) -> EarlierBudget:
        """A hypothesis from its mapping (``budget``, ``variant``, ``alternative``); unknown keys are refused."""
        if isinstance(values, EarlierBudget):
            return values
        if not isinstance(values, Mapping):
            raise PlanError(
                f"analysis: earlier_budgets must be a list of mappings with budget, variant and alternative, got {values!r}"
            )
        known = [f.name for f in fields(cls)]
        for key in values:
            if key not in known:
                raise PlanError(
                    f"analysis: earlier_budgets: unknown key {key!r}{did_you_mean(str(key), known)}; "
                    f"expected some of {', '.join(known)}"
                )
        return cls(**values)


@dataclass(frozen=True)
class LearningRules:
    """
    The rules that say where TD3 learns (:mod:`~sb3_ablation.study.plan.learning_rules` applies them).

    :param learning_fraction: a run did not learn when its final-window return is below the random policy's return
        plus this fraction of the span to the reference at the paper's budget
    :param q_bound_factor: a critic diverged when its |Q| is beyond this many times max |reward| / (1 - gamma)
    :param region_failure_rate: a component makes learning possible when the cells without it fail at least this
        often (pooled over their seeds)
    :param ceiling_fraction: a task is at its ceiling when TD3 and every variant end within this fraction of the span
        below the paper's reference, and within as much of each other
    """

    learning_fraction: float = 0.05
    q_bound_factor: float = 10.0
    region_failure_rate: float = 0.5
    ceiling_fraction: float = 0.05

    def __post_init__(self) -> None:
        for name, high in (
            ("learning_fraction", 1.0),
            ("q_bound_factor", math.inf),
            ("region_failure_rate", 1.0),
            ("ceiling_fraction", 1.0),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, int | float) and 0 < value <= high):
                raise PlanError(f"learning rules: {name} must be a number in (0, {high:g}], got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> LearningRules:
        """Rules from a mapping (missing keys: the defaults); an unknown key is refused with the closest known one."""
        values = dict(values or {})
        known = [f.name for f in fields(cls)]
        for key in values:
            if key not in known:
                hint = did_you_mean(str(key), known)
                raise PlanError(f"learning rules: unknown key {key!r}{hint}; expected some of {', '.join(known)}")
        return cls(**values)


@dataclass(frozen=True)
class AnalysisPlan:
    """
    :param primary: the primary outcome (one of :data:`OUTCOMES`)
    :param secondary: the secondary outcomes, reported with the same tests
    :param alpha: family-wise level of each family (Holm) and of the equivalence tests
    :param power: power of the minimum detectable effect and of the seeds needed
    :param final_fraction: the primary outcome ``final_window`` averages the evaluations at or after
        ``(1 - final_fraction)`` of training
    :param test: the paired test of "no difference" in every comparison (one of :data:`TESTS`)
    :param equivalence_test: the test whose two one-sided versions (TOST) decide "equivalent" (one of :data:`TESTS`;
        the default tests the mean, which failures pull down, so that a variant failing more often is not equivalent)
    :param reference_fraction: default equivalence margin, as a fraction of the task's reference span (random policy
        to the reference return at the study's budget)
    :param failure_fraction: a run did not learn when its final-window return is below the random policy's return
        plus this fraction of the reference span
    :param divergence_factor: a critic diverged when its overestimation is not finite or beyond this many times the
        task's value span (the reference span per step, discounted over an episode)
    :param margins: env id -> equivalence margin in return units, overriding the default
    :param failure_returns: env id -> the final-window return below which a run did not learn, overriding the default
    :param looks: the seed counts at which a group-sequential design analyses (empty: once, at the planned seeds)
    :param boundary: the alpha-spending boundary of a sequential design (one of :data:`BOUNDARIES`)
    :param seeds: the confirmatory seeds the verdicts use (empty: every seed); runs of other seeds are a replication,
        reported on their own
    :param learning: the rules that say where TD3 learns
        (:class:`~sb3_ablation.study.plan.learning_rules.LearningRules`; a mapping is read with its ``from_dict``);
        ``None``: not declared (the report then applies the package's defaults and says they were not declared before
        the runs). A study declared now declares them (their defaults unless the study file sets them); a plan without
        them keeps its ``to_dict``, and so its digest, unchanged.
    :param claims: how each comparison's claims share the family's alpha (one of :data:`CLAIMS`; ``None``: not
        declared, the rule ``differs-and-equivalent`` of the plans declared before it existed, whose digests stay
        unchanged; a study declared now declares :data:`DEFAULT_CLAIMS` unless its study file names a rule)
    :param earlier_budgets: confirmatory hypotheses at earlier budgets of the same runs (:class:`EarlierBudget`), in
        the same family as the comparisons at the full budget
    """

    primary: str = "final_window"
    secondary: tuple[str, ...] = ("last", "auc", "overestimation")
    alpha: float = 0.05
    power: float = 0.8
    final_fraction: float = 0.1
    test: str = DEFAULT_TEST
    equivalence_test: str = DEFAULT_EQUIVALENCE_TEST
    reference_fraction: float = 0.05
    failure_fraction: float = 0.1
    divergence_factor: float = 10.0
    margins: Mapping[str, float] = field(default_factory=dict)
    failure_returns: Mapping[str, float] = field(default_factory=dict)
    looks: tuple[int, ...] = ()
    boundary: str = "obrien-fleming"
    seeds: tuple[int, ...] = ()
    learning: LearningRules | None = None
    claims: str | None = None
    earlier_budgets: tuple[EarlierBudget, ...] = ()

    def __post_init__(self) -> None:
        if self.claims is not None and self.claims not in CLAIMS:
            raise PlanError(f"analysis: unknown claims {self.claims!r}; expected one of {', '.join(CLAIMS)}")
        if isinstance(self.earlier_budgets, Mapping | str) or not isinstance(self.earlier_budgets, Sequence):
            raise PlanError(
                "analysis: earlier_budgets must be a list of mappings with budget, variant and alternative, "
                f"got {self.earlier_budgets!r}"
            )
        earlier = tuple(EarlierBudget.from_dict(item) for item in self.earlier_budgets)
        if len(set(earlier)) != len(earlier):
            raise PlanError("analysis: earlier_budgets names the same hypothesis twice")
        if earlier and self.looks:
            raise PlanError(
                "analysis: earlier_budgets need a fixed design: a plan with looks decides its comparisons at the looks, "
                "and a hypothesis at an earlier budget has no boundaries there; drop looks or earlier_budgets"
            )
        object.__setattr__(self, "earlier_budgets", earlier)
        if self.learning is not None and not isinstance(self.learning, LearningRules):
            if not isinstance(self.learning, Mapping):
                raise PlanError(f"analysis: learning must be a mapping of learning rules, got {self.learning!r}")
            object.__setattr__(self, "learning", LearningRules.from_dict(self.learning))
        for name in (self.primary, *self.secondary):
            if name not in OUTCOMES:
                raise PlanError(f"analysis: unknown outcome {name!r}; expected one of {', '.join(OUTCOMES)}")
        for name, value, low, high in (
            ("alpha", self.alpha, 0.0, 0.5),
            ("power", self.power, 0.0, 1.0),
            ("final_fraction", self.final_fraction, 0.0, 1.0),
            ("reference_fraction", self.reference_fraction, 0.0, 1.0),
            ("failure_fraction", self.failure_fraction, 0.0, 1.0),
            ("divergence_factor", self.divergence_factor, 0.0, math.inf),
        ):
            if not (isinstance(value, int | float) and low < value <= high):
                raise PlanError(f"analysis: {name} must be a number in ({low:g}, {high:g}], got {value!r}")
        for key in ("test", "equivalence_test"):
            if getattr(self, key) not in TESTS:
                raise PlanError(f"analysis: unknown {key} {getattr(self, key)!r}; expected one of {', '.join(TESTS)}")
        if self.boundary not in BOUNDARIES:
            raise PlanError(f"analysis: unknown boundary {self.boundary!r}; expected one of {', '.join(BOUNDARIES)}")
        looks = tuple(self.looks)
        if not all(isinstance(n, int) and n >= 2 for n in looks) or list(looks) != sorted(set(looks)):
            raise PlanError(
                f"analysis: looks must be increasing seed counts of at least 2, e.g. [5, 10, 20]; got {list(looks)}"
            )
        object.__setattr__(self, "looks", looks)
        if not all(isinstance(seed, int) and seed >= 0 for seed in self.seeds):
            raise PlanError(f"analysis: seeds must be non-negative integers, got {list(self.seeds)}")
        object.__setattr__(self, "seeds", tuple(sorted(set(self.seeds))))
        for env, margin in self.margins.items():
            if not (isinstance(margin, int | float) and math.isfinite(margin) and margin > 0):
                raise PlanError(f"analysis: the margin of {env} must be a positive number, got {margin!r}")
        secondary = tuple(name for name in dict.fromkeys(self.secondary) if name != self.primary)
        object.__setattr__(self, "secondary", secondary)
        object.__setattr__(self, "margins", {str(env): float(m) for env, m in self.margins.items()})
        for env, value in self.failure_returns.items():
            if not (isinstance(value, int | float) and math.isfinite(value)):
                raise PlanError(f"analysis: the failure return of {env} must be a number, got {value!r}")
        object.__setattr__(self, "failure_returns", {str(env): float(v) for env, v in self.failure_returns.items()})

    @property
    def outcomes(self) -> tuple[str, ...]:
        return (self.primary, *self.secondary)

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain JSON; ``learning`` only where declared (so a plan without it keeps its digest)."""
        values = {
            **asdict(self),
            "secondary": list(self.secondary),
            "margins": dict(self.margins),
            "failure_returns": dict(self.failure_returns),
            "looks": list(self.looks),
            "seeds": list(self.seeds),
        }
        if self.learning is None:
            del values["learning"]
        else:
            values["learning"] = self.learning.to_dict()
        # written only where declared, so that the plans declared before these keys keep their digests
        if self.claims is None:
            del values["claims"]
        if self.earlier_budgets:
            values["earlier_budgets"] = [asdict(item) for item in self.earlier_budgets]
        else:
            del values["earlier_budgets"]
        return values

    @property
    def claim_rule(self) -> str:
        """The rule in force: the declared ``claims``, else the rule of the plans declared before it existed."""
        return self.claims or CLAIMS[0]

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> AnalysisPlan:
        """A plan from the ``analysis:`` mapping of a study file or ``study.json`` (missing keys: the defaults)."""
        values = dict(values or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            hints = ", ".join(quoted_with_suggestion(key, known) for key in unknown)
            plural = "s" if len(unknown) > 1 else ""
            raise PlanError(f"analysis: unknown key{plural} {hints}; expected some of {', '.join(sorted(known))}")
        if isinstance(values.get("earlier_budgets"), list):
            values["earlier_budgets"] = tuple(values["earlier_budgets"])
        for key in ("looks", "seeds"):
            if key in values:
                values[key] = tuple(values[key] or ())
        if isinstance(values.get("secondary"), str):
            values["secondary"] = [values["secondary"]]
        if "secondary" in values:
            values["secondary"] = tuple(values["secondary"] or ())
        for key in ("margins", "failure_returns"):
            if not isinstance(values.get(key, {}), Mapping):
                raise PlanError(f"analysis: {key} must map env ids to numbers, got {values[key]!r}")
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
        keys = [*mine, *(key for key in theirs if key not in mine)]
        return [f"{key} {theirs.get(key)} -> {mine.get(key)}" for key in keys if mine.get(key) != theirs.get(key)]


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


def check_plan_envs(plan: AnalysisPlan, envs: list[str], where: str = "analysis") -> None:
    """
    :param plan: an analysis plan
    :param envs: the study's env ids
    :param where: what set the margins, for the message (``analysis``: a study file; ``--margin``: the report's flag)
    :raise PlanError: the plan's ``margins`` or ``failure_returns`` name an env that is not in the study (e.g.
        ``pendulum-v1`` for ``Pendulum-v1``), which would otherwise be ignored without a word; every such env is
        named, with the closest env of the study (case ignored)
    """
    for key in ("margins", "failure_returns"):
        unknown = [env for env in getattr(plan, key) if env not in envs]
        if unknown:
            hints = [quoted_with_suggestion(env, envs, ignore_case=True) for env in unknown]
            raise PlanError(
                f"{where}: {key} of env{'s' * (len(unknown) > 1)} not in the study: {', '.join(hints)}; "
                f"the study's envs are {', '.join(envs)}"
            )


@dataclass(frozen=True)
class TaskReferences:
    """
    A task's anchors for margins and failures, fixed outside any study.

    :param env: env id
    :param random: the return of a uniformly random policy
    :param reference: the reference return at the study's budget (``None``: none at that budget)
    :param budget: the study's budget (training steps)
    :param sources: where each number comes from
    """

    env: str
    random: float | None
    reference: float | None
    budget: int | None
    sources: tuple[str, ...] = ()

    @property
    def span(self) -> float | None:
        """reference - random, the distance a margin and the failure rule are fractions of (``None``: unknown)."""
        if self.random is None or self.reference is None:
            return None
        return self.reference - self.random


@functools.cache
def _references_table() -> dict[str, Any]:
    with open(REFERENCES_FILE) as file:
        return yaml.safe_load(file) or {}


def reference_entry(env: str) -> dict[str, Any]:
    """The entry of ``env`` in ``references.yml`` as written (empty: none)."""
    return dict(_references_table().get(env) or {})


def task_references(env: str, budget: int | None) -> TaskReferences:
    """The random-policy return of ``env`` and its reference return at exactly ``budget`` training steps."""
    entry = _references_table().get(env) or {}
    random_entry = entry.get("random") or {}
    reference = next((r for r in entry.get("references", []) if budget is not None and r["budget"] == budget), None)
    sources = tuple(item["source"] for item in (random_entry, reference or {}) if item.get("source"))
    return TaskReferences(
        env=env,
        random=random_entry.get("return"),
        reference=None if reference is None else reference["return"],
        budget=budget,
        sources=sources,
    )


def env_margin(plan: AnalysisPlan, references: TaskReferences) -> tuple[float | None, str]:
    """
    The equivalence margin of a task's return, in return units, and where it comes from.

    :return: ``(margin, source)``; ``margin`` is ``None`` when the plan sets none and the task has no reference at the
        study's budget (then no comparison of that task can be ``equivalent``)
    """
    if references.env in plan.margins:
        return plan.margins[references.env], "declared in the study's plan"
    if references.span is None or references.span <= 0:
        return None, f"none: no reference return of {references.env} at {references.budget or 0:,} steps; declare one"
    return plan.reference_fraction * references.span, (
        f"{plan.reference_fraction:.0%} of the span from a random policy ({references.random:,.1f}) to the reference "
        f"at {references.budget:,} steps ({references.reference:,.1f})"
    )


def failure_threshold(plan: AnalysisPlan, references: TaskReferences) -> tuple[float | None, str]:
    """
    The final-window return below which a run did not learn, and where it comes from: declared in the plan
    (``failure_returns``), else ``failure_fraction`` of the way from the random policy to the reference at the study's
    budget. ``None``: neither (the failure outcome is not assessed on that task).
    """
    if references.env in plan.failure_returns:
        return plan.failure_returns[references.env], "declared in the study's plan"
    if references.span is None or references.random is None or references.span <= 0:
        return None, f"none: no reference return of {references.env} at {references.budget or 0:,} steps; declare one"
    threshold = references.random + plan.failure_fraction * references.span
    return threshold, (
        f"{plan.failure_fraction:.0%} of the span from a random policy ({references.random:,.1f}) to the reference at "
        f"{references.budget:,} steps ({references.reference:,.1f})"
    )


def published_reference(env: str) -> tuple[float, float] | None:
    """
    ``(random, reference)`` of ``env`` with the reference at its longest published budget: the fixed scale of
    normalized scores across tasks (``None``: the task has no references).
    """
    entry = _references_table().get(env) or {}
    longest = max(entry.get("references", []), key=lambda r: r["budget"], default=None)
    random_return = (entry.get("random") or {}).get("return")
    return None if longest is None or random_return is None else (float(random_return), float(longest["return"]))
