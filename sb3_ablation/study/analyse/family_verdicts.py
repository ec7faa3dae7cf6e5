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
