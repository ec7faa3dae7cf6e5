"""The tuned study's table labels its verdicts as every other table does: an `equivalent` at the ceiling says so."""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sb3_ablation.study.analyse.budget import AT_CEILING
from sb3_ablation.study.analyse.inference import EQUIVALENT, compare_family
from sb3_ablation.study.analyse.report_model import EnvTuning, TunedComparison, TuningComparison
from sb3_ablation.study.render.format import fmt_p
from sb3_ablation.study.render.tuning import TITLE, tuning_sections

TUNING = {
    "seeds": [1000, 1001],
    "search_space": {"tau": {"low": 0.001, "high": 0.05, "log": True}},
    "n_trials": 3,
    "sampler": "tpe",
    "pruner": "median",
    "aggregate": "mean",
    "n_evaluations": 5,
}


def _equivalent() -> object:
    differences = {"no_clipped_double_q": np.array([0.1, -0.2, 0.05, 0.0, -0.1, 0.15, -0.05, 0.1, -0.1, 0.02])}
    comparison = compare_family(differences, 0.05, 10.0)["no_clipped_double_q"]
    assert comparison.verdict == EQUIVALENT
    return comparison


@pytest.mark.parametrize("is_return", [True, False])
def test_an_equivalent_at_the_ceiling_carries_its_label_in_both_answers_of_the_tuned_table(is_return):
    comparison = _equivalent()
    row = TunedComparison(
        "no_clipped_double_q", comparison, comparison, math.nan, "undefined", None, default_label=AT_CEILING, own_label=None
    )
    env = EnvTuning("Pendulum-v1", "final_window", "final return", [row], is_return=is_return)
    model = SimpleNamespace(tuning=TuningComparison(TUNING, Path("study/tuned"), [env]), baseline="td3")
    (section,) = tuning_sections(model)
    assert section.title == TITLE
    (line,) = [line for line in section.lines if line.startswith("| no_clipped_double_q |")]
    cells = [cell.strip() for cell in line.split("|")[1:-1]]
    p = f"equivalence p {fmt_p(comparison.p_equivalence_adjusted)}"
    # the default answer's label (at ceiling: return units only); the own answer has none
    assert cells[2] == (f"cannot tell: both arms solve the task at this budget, {p}" if is_return else f"**equivalent**, {p}")
    assert cells[4] == f"**equivalent**, {p}"
    (shown,) = section.json["envs"]["Pendulum-v1"]["comparisons"]
    assert shown["default"]["label"] == (AT_CEILING if is_return else None)
    assert shown["default"]["qualified_verdict"] == (
        "cannot tell: both arms solve the task at this budget" if is_return else "equivalent"
    )
    assert shown["own"]["label"] is None and shown["own"]["qualified_verdict"] == "equivalent"
