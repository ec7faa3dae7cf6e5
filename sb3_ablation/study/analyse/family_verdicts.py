"""One error rate for a family of comparisons and two kinds of claims: the verdicts ``differs``, ``equivalent`` and
``unresolved`` from the comparisons' p-values (:func:`decide_family`, with the guarantee :data:`GUARANTEE`).

A comparison (:class:`~sb3_ablation.study.analyse.paired_tests.PairedResult`) carries two hypotheses: "no difference"
(rejected: ``differs``) and "not equivalent within ±margin" (rejected: ``equivalent``). Both kinds go through one
step-down procedure, so a family's claims of either kind share one family-wise error rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sb3_ablation.study.analyse.paired_tests import PairedResult

DIFFERS, EQUIVALENT, UNRESOLVED = "differs", "equivalent", "unresolved"
GUARANTEE = (
    "`differs` and `equivalent` share one family-wise error rate: the family's 2m hypotheses (no difference, not "
    "equivalent) go through Holm's step-down together (Shaffer's, which uses that at most one of a comparison's two "
    "hypotheses is true, where both are about the same parameter), so the probability of any false `differs` or "
    "false `equivalent` in a family is at most alpha."
)

#: the guarantee of each claims rule (:data:`~sb3_ablation.study.plan.analysis_plan.CLAIMS`), one analysis per study
RULE_GUARANTEES = {
    "differs-and-equivalent": GUARANTEE,
    "differs": (
        "The plan makes no equivalence claims: each comparison's \"no difference\" alone is tested, Holm's step-down "
        "over the family's m hypotheses, so the probability of any false `differs` in a family is at most alpha."
    ),
    "partitioned": (
        "`differs` and `equivalent` share one family-wise error rate: a comparison's two null hypotheses are disjoint "
        '("no difference": its arms are exchangeable, so the difference is centred on 0; "not equivalent": the '
        "difference is at least the margin away from 0), so at most one of them is true, and both are tested at the "
        "comparison's share of alpha, Holm's step-down over the m comparisons (a share passes to the others once both "
        "of its comparison's hypotheses are rejected: the partitioning principle, Finner and Strassburger 2002); the "
        "probability of any false `differs` or false `equivalent` in a family is at most alpha (simulated with the "
        "package's tests: docs/calibration.md)."
    ),
}


def claims_guarantee(rule: str, declared: bool, guarantee: str | None = None) -> str:
    """
    The error control of a plan's claims rule, in words, naming the rule.

    :param rule: the rule in force (:data:`~sb3_ablation.study.plan.analysis_plan.CLAIMS`)
    :param declared: the plan declares ``claims`` (else the rule is that of the plans declared before it existed)
    :param guarantee: the rule's text where another procedure replaces it (the group-sequential looks'); ``None``:
        :data:`RULE_GUARANTEES`
    :return: ``Claims rule `rule` (...)`` followed by the guarantee
    """
    how = "declared by the plan" if declared else "the plan declares no `claims`: the rule of the plans declared before it"
    return f"Claims rule `{rule}` ({how}). {guarantee or RULE_GUARANTEES[rule]}"


def exclusive_claims(rule: str, test: str, equivalence_test: str) -> bool:
    """
    Whether at most one of a comparison's two hypotheses can be true, so that the family's divisor counts comparisons
    (Shaffer) rather than hypotheses (Holm over 2m): one test makes both claims (they are about one parameter), or
    the plan declares the ``partitioned`` rule (its "no difference" is the arms' exchangeability, under which every
    location of the difference is 0, disjoint from "not equivalent" whatever the tests).

    :param rule: the plan's claims rule
    :param test: the test of "no difference"
    :param equivalence_test: the test of "not equivalent"
    """
    return rule == "partitioned" or test == equivalence_test


@dataclass(frozen=True)
class Verdict:
    """
    :param verdict: :data:`DIFFERS`, :data:`EQUIVALENT` or :data:`UNRESOLVED`
    :param within_margin: both hypotheses rejected: the difference is real and within the margin (verdict differs)
    :param p_differs_adjusted: Shaffer-adjusted p-value of "no difference" (NaN: not tested)
    :param p_equivalent_adjusted: Shaffer-adjusted p-value of "not equivalent" (NaN: no margin)
    """

    verdict: str
    within_margin: bool
    p_differs_adjusted: float
    p_equivalent_adjusted: float


def decide_family(results: Sequence[PairedResult], alpha: float, exclusive: bool = True) -> list[Verdict]:
    """
    The verdicts of a family of comparisons, with one family-wise error rate for both kinds of claims (:data:`GUARANTEE`).

    Shaffer's step-down over the 2m hypotheses sorted by p (ties in input order, "no difference" first): at each
    step the divisor is the number of comparisons that still have an unrejected hypothesis (each can have at most
    one true one, and both can be true for none); rejection stops at the first p above alpha over its divisor.
    Adjusted p-values are the running maximum of divisor times p (capped at 1), so they are monotone and a
    hypothesis is rejected exactly when its adjusted p-value is at most alpha. NaN p-values (no test, no margin)
    are not part of the family.

    :param results: the family's comparisons
    :param alpha: the family-wise level
    :param exclusive: the two hypotheses of a comparison are about the same parameter (one test for both claims), so
        at most one is true; ``False`` (e.g. Wilcoxon for differs, a test of the mean for equivalence): Holm over all
        2m hypotheses, the divisor being the number of hypotheses not yet rejected
    :return: one verdict per comparison, in the order given
    """
    hypotheses = [(r.p_differs, i, 0) for i, r in enumerate(results) if math.isfinite(r.p_differs)]
    hypotheses += [(r.p_equivalent, i, 1) for i, r in enumerate(results) if math.isfinite(r.p_equivalent)]
    hypotheses.sort(key=lambda h: (h[0], h[1], h[2]))
    remaining = [0] * len(results)
    for _, i, _ in hypotheses:
        remaining[i] += 1
    adjusted: dict[tuple[int, int], float] = {}
    rejected: set[tuple[int, int]] = set()
    running = 0.0
    for p, i, kind in hypotheses:
        divisor = sum(1 for count in remaining if count > 0) if exclusive else sum(remaining)
        running = max(running, min(1.0, divisor * p))
        adjusted[(i, kind)] = running
        if running <= alpha:
            rejected.add((i, kind))
        remaining[i] -= 1
    verdicts = []
    for i in range(len(results)):
        differs, equivalent = (i, 0) in rejected, (i, 1) in rejected
        verdict = DIFFERS if differs else EQUIVALENT if equivalent else UNRESOLVED
        verdicts.append(
            Verdict(verdict, differs and equivalent, adjusted.get((i, 0), math.nan), adjusted.get((i, 1), math.nan))
        )
    return verdicts
