"""The analysis plan: declared before the runs, validated, and anchored to task references outside any study."""

import math

import pytest

from sb3_ablation.study.plan.analysis_plan import (
    AnalysisPlan,
    PlanError,
    env_margin,
    failure_threshold,
    task_references,
)


def test_pendulum_margin_and_failure_come_from_the_random_policy_and_rl_zoos_score_at_the_budget():
    references = task_references("Pendulum-v1", 20_000)
    assert (references.random, references.reference) == (-1218.9, -151.9)
    margin, how = env_margin(AnalysisPlan(), references)
    assert margin == pytest.approx(0.05 * (1218.9 - 151.9))
    assert "random policy" in how and "20,000 steps" in how
    threshold, _ = failure_threshold(AnalysisPlan(), references)
    assert threshold == pytest.approx(-1218.9 + 0.1 * (1218.9 - 151.9))


def test_a_budget_without_a_reference_gets_no_default_margin_or_failure_threshold():
    references = task_references("Hopper-v5", 100_000)  # rl-zoo's and D4RL's scores are at 1M steps
    assert references.random is not None and references.reference is None
    margin, how = env_margin(AnalysisPlan(), references)
    assert margin is None and "declare one" in how
    assert failure_threshold(AnalysisPlan(), references)[0] is None
    declared = AnalysisPlan(margins={"Hopper-v5": 100}, failure_returns={"Hopper-v5": 100})
    assert env_margin(declared, references) == (100.0, "declared in the study's plan")
    assert failure_threshold(declared, references)[0] == 100.0


def test_an_unknown_task_has_no_references():
    references = task_references("MyEnv-v0", 1_000)
    assert references.span is None and env_margin(AnalysisPlan(), references)[0] is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"alhpa": 0.1}, "unknown key 'alhpa' (did you mean 'alpha'?)"),
        ({"alhpa": 0.1, "tets": "t"}, "unknown keys 'alhpa' (did you mean 'alpha'?), 'tets' (did you mean 'test'?)"),
        ({"test": "ttest"}, "unknown test 'ttest'"),
        ({"looks": [10, 5]}, "looks must be increasing seed counts"),
        ({"boundary": "haybittle"}, "unknown boundary 'haybittle'"),
        ({"failure_returns": {"Hopper-v5": "low"}}, "the failure return of Hopper-v5 must be a number"),
    ],
)
def test_a_bad_plan_is_one_line_naming_every_offending_key(values, message):
    with pytest.raises(PlanError, match=r"^analysis: ") as error:
        AnalysisPlan.from_dict(values)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_plan_survives_its_json_round_trip():
    plan = AnalysisPlan(test="signflip", looks=(5, 10, 20), margins={"Pendulum-v1": 40}, failure_returns={"X-v0": 1})
    assert AnalysisPlan.from_dict(plan.to_dict()) == plan
    assert AnalysisPlan.from_dict({}) == AnalysisPlan() and math.isclose(AnalysisPlan().alpha, 0.05)


def test_the_plan_names_exactly_the_tests_the_analysis_has():
    from sb3_ablation.study.analyse import paired_tests
    from sb3_ablation.study.plan import analysis_plan

    # the plan layer cannot import the analysis layer: its list of tests must be the one the analysis implements
    # (its defaults are checked against the committed calibration table in tests/unit/test_robust.py)
    assert analysis_plan.TESTS == paired_tests.TESTS
    assert {analysis_plan.DEFAULT_TEST, analysis_plan.DEFAULT_EQUIVALENCE_TEST} <= set(paired_tests.TESTS)


def test_claims_and_earlier_budgets_are_written_only_where_declared():
    # a plan declared before these keys existed keeps its JSON, and so its digest
    assert {"claims", "earlier_budgets"}.isdisjoint(AnalysisPlan().to_dict())
    assert AnalysisPlan().claim_rule == "differs-and-equivalent"
    declared = AnalysisPlan.from_dict(
        {"claims": "differs", "earlier_budgets": [{"budget": 300, "variant": "no_clipped_double_q", "alternative": "less"}]}
    )
    values = declared.to_dict()
    assert values["claims"] == "differs" and declared.claim_rule == "differs"
    assert values["earlier_budgets"] == [{"budget": 300, "variant": "no_clipped_double_q", "alternative": "less"}]
    assert AnalysisPlan.from_dict(values) == declared


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"claims": "both"}, "unknown claims 'both'"),
        ({"earlier_budgets": {"budget": 3}}, "earlier_budgets must be a list"),
        ({"earlier_budgets": [{"budget": 0, "variant": "td3"}]}, "budget must be a positive integer, got 0"),
        ({"earlier_budgets": [{"budget": 3, "variant": "x", "alternative": "up"}]}, "unknown alternative 'up'"),
        ({"earlier_budgets": [{"budget": 3, "variant": "x", "alternativ": "less"}]}, "did you mean 'alternative'"),
        ({"earlier_budgets": [{"budget": 3, "variant": "x"}] * 2}, "the same hypothesis twice"),
    ],
)
def test_a_bad_earlier_budget_or_claims_is_one_line(values, message):
    with pytest.raises(PlanError, match=message) as error:
        AnalysisPlan.from_dict(values)
    assert "\n" not in str(error.value)
