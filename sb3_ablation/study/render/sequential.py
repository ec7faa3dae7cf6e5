"""The report's account of a group-sequential design: per comparison, each look's p-value against its boundary, the
alpha spent by each look, where the design stopped and what is still open."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sb3_ablation.study.analyse.family_verdicts import DIFFERS
from sb3_ablation.study.analyse.sequential import BIAS_NOTE, OPEN
from sb3_ablation.study.render.format import fmt_p
from sb3_ablation.study.render.labels import qualified_verdict

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.report_model import Looks


def _look_cell(p: float, level: float, crossed: bool) -> str:
    if math.isnan(p):
        return "not reached"
    return f"{'**' if crossed else ''}p {fmt_p(p)}{'**' if crossed else ''} vs {fmt_p(level)}"


def looks_lines(looks: Looks, alpha: float, labels: Mapping[str, str | None] | None = None) -> list[str]:
    """
    A table of the design's looks for one env's primary outcome, with the alpha spent and the note on estimates after
    early stopping.

    :param looks: the env's sequential analysis
    :param alpha: the family-wise level
    :param labels: variant -> the label of its ``equivalent`` (:mod:`~sb3_ablation.study.render.labels`)
    """
    spent = looks.spent
    header = "| variant | " + " | ".join(f"look {k + 1}: {n} seeds" for k, n in enumerate(looks.looks)) + " | decision |"
    lines = [
        f"**Group-sequential looks** ({looks.boundary} alpha spending; {looks.reached} of {len(looks.looks)} looks "
        f"reached; look k uses the baseline's first seeds in increasing order: "
        f"{', '.join(map(str, looks.seed_order[: looks.looks[max(looks.reached - 1, 0)]]))}). Alpha spent by each look "
        f"at the family's level {alpha:g}: " + ", ".join(f"{a:.4f}" for a in spent) + "; each comparison spends its "
        "share of it (the level column), and a rejection passes its share to the others. A cell shows the look's "
        "p-value against its boundary as a nominal level.",
        "",
        header,
        "|---|" + "---|" * len(looks.looks) + "---|",
    ]
    for variant, decision in looks.decisions.items():
        cells = [
            _look_cell(p, c, decision.verdict == DIFFERS and decision.look == k)
            for k, (p, c) in enumerate(zip(decision.p_values, looks.nominal[variant], strict=True))
        ]
        verdict = qualified_verdict(decision.verdict, (labels or {}).get(variant))
        stop = (
            f"{verdict} at look {decision.look + 1}"
            if decision.look is not None
            else "open: next block of seeds"
            if decision.verdict == OPEN
            else verdict
        )
        lines.append(f"| {variant} | " + " | ".join(cells) + f" | {stop} (level {decision.level:.4g}) |")
    lines += ["", BIAS_NOTE, ""]
    return lines


def looks_json(looks: Looks, labels: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """The sequential analysis as plain JSON (non-finite numbers as null); ``verdict`` (and ``qualified_verdict``): the
    decision as the report gives it (:mod:`~sb3_ablation.study.render.labels`), ``test_verdict``: the test's own."""

    def number(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return {
        "looks": list(looks.looks),
        "boundary": looks.boundary,
        "seed_order": list(looks.seed_order),
        "reached": looks.reached,
        "decisions": {
            v: {
                # as verdict_json: the decision as shown, and the test's own
                "verdict": qualified_verdict(d.verdict, (labels or {}).get(v)),
                "test_verdict": d.verdict,
                "qualified_verdict": qualified_verdict(d.verdict, (labels or {}).get(v)),
                "look": d.look,
                "level": d.level,
                "boundaries": [number(c) for c in d.boundaries],
                "p_values": [number(p) for p in d.p_values],
                "p_equivalence": number(d.p_equivalence),
            }
            for v, d in looks.decisions.items()
        },
    }
