"""The plan's failure table says whose rule it counts by, where the learning rules count by another threshold."""

import math

import pytest

from sb3_ablation.study.analyse.failures import EnvFailures
from sb3_ablation.study.render.tables import failures_table

RULES_SENTENCE = "These are the plan's failure outcome, not the learning rules of 'Where TD3 learns'"


@pytest.mark.parametrize(
    ("plan_threshold", "rules_threshold", "named"),
    [(100.0, 196.7, True), (196.7, 196.7, False), (None, 196.7, True), (100.0, None, False)],
)
def test_the_learning_rules_threshold_is_named_where_it_differs_from_the_plans(plan_threshold, rules_threshold, named):
    failures = EnvFailures("Hopper-v5", plan_threshold, "declared in the study's plan", math.nan, {})
    heading = failures_table(failures, "td3", rules_threshold)[0]
    assert heading.startswith("**Failures, by the plan's failure outcome** (below the plan's threshold: ")
    assert (RULES_SENTENCE in heading) is named
    if named:
        assert "(did not learn: final-window return < 196.7)" in heading
    # no divergence bound: a critic diverged when its overestimation is not finite, and nothing is said of a bound
    assert "critic diverged: overestimation not finite)." in heading and "±" not in heading
