"""
Before a study runs: can its seeds reach a verdict at all?

An exact paired test has a smallest p-value it can give with ``n`` pairs (every difference of one sign: ``2 / 2^n``
for Wilcoxon's signed-rank test, :func:`~sb3_ablation.study.analyse.paired_methods.smallest_p`). The family's
step-down asks its first hypothesis for ``p <= alpha / H``, with ``H`` the family's hypotheses: one per comparison,
or two where each comparison also carries an equivalence claim tested by another test (Holm over both kinds). Where
the smallest p is above that level, no comparison can ever be ``differs``, whatever the runs give: the study would
spend its time on estimates only. :func:`family_reach` says so for each env before the first run, with the seeds
that would do and the fewest comparisons that would.
"""

from __future__ import annotations

from dataclasses import dataclass

from sb3_ablation.common.utils import plural
from sb3_ablation.common.zoo_budget import env_budget
from sb3_ablation.study.analyse.paired_methods import smallest_p
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan, env_margin, task_references
from sb3_ablation.study.plan.config import StudyConfig
from sb3_ablation.study.plan.designs import DESIGN_NAMES
from sb3_ablation.study.plan.variants import Variant, baseline_name
from sb3_ablation.study.run.backends import default_workers
from sb3_ablation.study.run.estimate import estimate_study, study_tasks

#: the most seeds :attr:`FamilyReach.seeds_needed` looks at (beyond it: "more than this many")
MAX_SEEDS = 100


@dataclass(frozen=True)
class FamilyReach:
    """
    Whether one env's family of comparisons can reach ``differs`` with the study's seeds.

    :param env: the env id
    :param comparisons: the comparisons in its family (variants against the baseline, and earlier budgets)
    :param hypotheses_each: hypotheses per comparison in the first step's divisor (2: also an equivalence claim, by
        another test)
    :param alpha: the family-wise level
    :param n: the seed pairs of each comparison
    :param test: the paired test of "no difference"
    """

    env: str
    comparisons: int
    hypotheses_each: int
    alpha: float
    n: int
    test: str

    @property
    def level(self) -> float:
        """The level the step-down's first step asks of a hypothesis."""
        return self.alpha / (self.comparisons * self.hypotheses_each)

    @property
    def smallest_p(self) -> float:
        """The smallest p the test can give with :attr:`n` pairs."""
        return smallest_p(self.test, self.n)

    @property
    def reachable(self) -> bool:
        """Whether a ``differs`` is possible at all."""
        return self.smallest_p <= self.level

    @property
    def seeds_needed(self) -> int | None:
        """The fewest seeds with which a ``differs`` becomes possible (None: none up to :data:`MAX_SEEDS`)."""
        return next((n for n in range(2, MAX_SEEDS + 1) if smallest_p(self.test, n) <= self.level), None)

    @property
    def most_comparisons(self) -> int:
        """The most comparisons a family may have for a ``differs`` to be possible with :attr:`n` seeds (0: none)."""
        return int(self.alpha / (self.hypotheses_each * self.smallest_p) + 1e-9) if self.n >= 2 else 0

    def line(self) -> str:
        """One line: the smallest p against the level, and what would make a verdict possible where none is."""
        hypotheses = self.comparisons * self.hypotheses_each
        said = (
            f"{self.env}: {plural(self.comparisons, 'comparison')}, {plural(self.n, 'seed')}: the smallest p is "
            f"{self.smallest_p:.2g} against the first step's level {self.level:.2g} ({self.alpha:g} over "
            f"{plural(hypotheses, 'hypothesis', 'hypotheses')})"
        )
        if self.reachable:
            return f"{said}: a differs is possible"
        needed = self.seeds_needed
        seeds = f"at least {needed} seeds (--seeds {needed})" if needed else f"more than {MAX_SEEDS} seeds"
        fewer = (
            f", or at most {self.most_comparisons} comparison{'s' if self.most_comparisons > 1 else ''} with these seeds"
            if self.most_comparisons >= 1
            else ""
        )
        return f"{said}: no comparison can be differs; give {seeds}{fewer}"


def family_reach(
    plan: AnalysisPlan, envs: list[str], variants: list[Variant], seeds: list[int], budgets: dict[str, int]
) -> list[FamilyReach]:
    """
    The reach of each env's family (see the module docstring), as the report will form it: the variants other than the
    baseline and the references, plus the plan's earlier budgets; two hypotheses each where the task has an
    equivalence margin, the plan makes equivalence claims and tests them with another test than ``differs``.

    :param plan: the analysis plan the study declares (its confirmatory ``seeds``, where it names them, are the pairs)
    :param envs: the study's envs
    :param variants: its variants
    :param seeds: its seeds
    :param budgets: env -> its training budget (for the default margin, from the task's reference at that budget)
    :return: one per env; empty where there is no baseline to compare with
    """
    baseline = baseline_name([v.name for v in variants])
    compared = [v for v in variants if v.name != baseline and not v.is_reference]
    comparisons = len(compared) + len(plan.earlier_budgets)
    if baseline is None or not comparisons:
        return []
    n = len(set(plan.seeds) & set(seeds)) if plan.seeds else len(seeds)
    reaches = []
    for env in envs:
        margin, _ = env_margin(plan, task_references(env, budgets.get(env)))
        equivalence = margin is not None and plan.claims != "differs" and plan.equivalence_test != plan.test
        reaches.append(FamilyReach(env, comparisons, 2 if equivalence else 1, plan.alpha, n, plan.test))
    return reaches


@dataclass(frozen=True)
class Preflight:
    """
    What ``study`` says before its first run.

    :param lines: the runs and time estimate, then each env's reach
    :param refusal: the one line refusing a study that can reach no verdict (None: it may run)
    """

    lines: list[str]
    refusal: str | None


def preflight(config: StudyConfig, plan: AnalysisPlan, quick: bool = False, timed: bool = True) -> Preflight:
    """
    The runs to do and their estimated time (:func:`~sb3_ablation.study.run.estimate.estimate_study`), and whether
    each env's family can reach ``differs`` (:func:`family_reach`). A study whose families can never reach it is
    refused, unless it is a short try (``--quick``, or every env's budget below its zoo entry's) or a factorial design
    (whose main effects pool the cells), which are told instead.

    :param config: the study's settings
    :param plan: the plan in force (the folder's, else the one the study declares)
    :param quick: ``--quick`` was given
    :param timed: estimate the time (False: the runs are counted, not timed)
    """
    tasks, pending = study_tasks(config)
    variants = config.variant_objects
    budgets = {task.env: int(float(task.hyperparams.get("n_timesteps", 0))) for task in tasks}
    reaches = family_reach(plan, config.envs, variants, config.seeds, budgets)
    unreachable = [reach for reach in reaches if not reach.reachable]
    short = quick or all(
        (zoo := env_budget("ablatable_td3", env)) is not None and budget < zoo for env, budget in budgets.items()
    )
    # a factorial design's main effects pool its cells (more pairs than seeds): only its cells against TD3 are told
    design = any(spec.split(":")[0] in DESIGN_NAMES for spec in config.variants)
    if unreachable and pending and not short and not design:  # refused before anything is timed
        return Preflight([], f"{unreachable[0].line()} (a short try, with --quick, runs anyway)")
    workers = min(config.workers or default_workers(), max(1, len(pending)))
    engine = config.engine if timed else "untimed"
    baseline = baseline_name([v.name for v in variants])
    lines = [estimate_study(pending, workers, engine, baseline).line()] if pending else []
    lines += [reach.line() for reach in reaches]
    if unreachable and pending and not design:
        lines.append("a short try: it runs, and its report gives estimates with intervals, no verdicts")
    return Preflight(lines, None)
