"""How a plan's claims share alpha (``claims``: differs-and-equivalent, differs, partitioned) and its hypotheses at
earlier budgets of the same runs (``earlier_budgets``), in the analysis (study/analyse/analysis.py, inference.py,
family_verdicts.py) and the report."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from sb3_ablation.study.analyse.analysis import build_model
from sb3_ablation.study.analyse.family_verdicts import DIFFERS, EQUIVALENT, UNRESOLVED, decide_family
from sb3_ablation.study.analyse.inference import compare_family
from sb3_ablation.study.analyse.paired_tests import PairedResult, compare_paired
from sb3_ablation.study.analyse.report_model import NO_MARGIN_PLANNED
from sb3_ablation.study.analyse.results import load_study
from sb3_ablation.study.analyse.sequential import sequential_family
from sb3_ablation.study.plan.analysis_plan import DEFAULT_CLAIMS, AnalysisPlan, PlanError
from sb3_ablation.study.plan.config import StudyConfig
from sb3_ablation.study.plan.digest import plan_digest
from sb3_ablation.study.render.json_parts import env_json
from sb3_ablation.study.render.summaries import findings_markdown
from sb3_ablation.study.store.manifest import open_manifest
from tests.unit.synthetic_studies import curve_study

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ROOT / "docs" / "studies"
# six pairs all of one sign: Wilcoxon's two-sided p is 2/64, between alpha/2 and alpha at 0.05
SIX_POSITIVE = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])


def test_a_comparison_share_tests_both_claims_under_partitioned_only():
    # one comparison: Holm over its two hypotheses asks 0.025 of "no difference"; partitioned asks its share, 0.05
    # (a margin of 4 around differences of mean 3.5: not shown equivalent)
    (old,) = compare_family({"a": SIX_POSITIVE}, 0.05, 4.0).values()
    (new,) = compare_family({"a": SIX_POSITIVE}, 0.05, 4.0, claims="partitioned").values()
    assert old.p_raw == new.p_raw == 2 / 64
    assert (old.verdict, old.p_adjusted) == (UNRESOLVED, 2 * 2 / 64)
    assert (new.verdict, new.p_adjusted) == (DIFFERS, 2 / 64)
    assert "partitioned" in new.test and "partitioned" not in old.test


def test_partitioned_keeps_a_comparison_share_until_both_of_its_claims_are_rejected():
    # "a" is shown equivalent (its "no difference" stands, and may be the true one): "b" still shares alpha with it
    a = PairedResult("wilcoxon", 10, 0.0, 0.0, 0.0, 0.9, 0.001)
    b = PairedResult("wilcoxon", 10, 0.0, 0.0, 0.0, 0.03, 0.9)
    verdicts = decide_family([a, b], 0.05, exclusive=True)
    assert [v.verdict for v in verdicts] == [EQUIVALENT, UNRESOLVED]
    assert verdicts[1].p_differs_adjusted == 2 * 0.03
    # the group-sequential family alike: one look, the share of each of two comparisons is 0.025
    decisions = sequential_family({"a": [0.9], "b": [0.03]}, {"a": 0.001, "b": 0.9}, [10], 0.05, exclusive=True)
    assert (decisions["a"].verdict, decisions["b"].verdict, decisions["b"].level) == (EQUIVALENT, UNRESOLVED, 0.025)


def test_claims_differs_tests_no_equivalence():
    # differences far inside the margin: equivalent under the other rules, never under differs
    tight = np.array([0.1, -0.1] * 5)
    assert compare_family({"a": tight}, 0.05, 100.0)["a"].verdict == EQUIVALENT
    only = compare_family({"a": tight, "b": SIX_POSITIVE * 100}, 0.05, 100.0, claims="differs")["a"]
    assert only.verdict == UNRESOLVED and np.isnan(only.p_equivalence) and np.isnan(only.p_equivalence_adjusted)
    assert "no equivalence claims" in only.test


def test_a_one_sided_comparison_has_a_one_sided_p_and_bound():
    two = compare_paired(SIX_POSITIVE, "wilcoxon", 0.05)
    ahead = compare_paired(SIX_POSITIVE, "wilcoxon", 0.05, alternative="greater")
    behind = compare_paired(SIX_POSITIVE, "wilcoxon", 0.05, alternative="less")
    assert (ahead.p_differs, two.p_differs, behind.p_differs) == (1 / 64, 2 / 64, 1.0)
    assert ahead.ci_high == np.inf and behind.ci_low == -np.inf
    # the one-sided 95% bound is the end of the two-sided 90% interval
    assert ahead.ci_low == compare_paired(SIX_POSITIVE, "wilcoxon", 0.10).ci_low
    assert behind.ci_high == compare_paired(SIX_POSITIVE, "wilcoxon", 0.10).ci_high


def _ahead_early(variant: str, seed: int, steps: np.ndarray) -> np.ndarray:
    """
    Returns at ``steps``: td3 at -1,000 + seed; no_delayed_policy_update 300 + seed ahead in the 10k budget's final
    window (9k-10k steps) only: 1,000 behind before it, level with td3 (up to ±1 by seed) after it;
    no_target_policy_smoothing level with td3 throughout.
    """
    base = np.full(len(steps), -1000.0 + seed)
    if variant != "no_delayed_policy_update":
        return base
    offset = np.where(steps < 9000, -1000.0, np.where(steps <= 10000, 300.0 + seed, 1.0 if seed % 2 else -1.0))
    return base + offset


def _plan(**values) -> AnalysisPlan:
    return AnalysisPlan.from_dict({"claims": "differs", "test": "wilcoxon", **values})


def test_an_earlier_budget_joins_the_family_with_its_own_window():
    data = curve_study(["td3", "no_delayed_policy_update", "no_target_policy_smoothing"], _ahead_early)
    ahead = {"budget": 10000, "variant": "no_delayed_policy_update", "alternative": "greater"}
    plan = _plan(earlier_budgets=[ahead])
    model = build_model(data, plan, plan, "td3", 50, 0)
    primary = model.envs[0].outcome("final_window")
    (early,) = primary.earlier
    c = early.comparison
    assert early.name == "no_delayed_policy_update at 10,000 steps (one-sided: ahead)"
    # the window of the 10k budget (9k and 10k steps): exactly 300 + seed ahead on 10 seeds
    assert c.differences == tuple(300.0 + seed for seed in range(10))
    assert 300.0 <= c.effect <= 309.0 and c.ci is not None and 0 < c.ci[0] <= c.effect and c.ci[1] == np.inf
    # one-sided exact Wilcoxon p with 10 positive pairs; Holm over the family of 3 (2 comparisons at 20k + this)
    assert (c.p_raw, c.p_adjusted, c.family_size, c.verdict) == (1 / 1024, 3 / 1024, 3, DIFFERS)
    assert {v.family_size for v in primary.comparisons.values()} == {3} and set(primary.comparisons) == {
        "no_delayed_policy_update",
        "no_target_policy_smoothing",
    }
    # no margin planned under claims: differs, and the report says so
    assert primary.margin.how == NO_MARGIN_PLANNED
    assert all(np.isnan(v.p_equivalence) for v in primary.comparisons.values())
    text = findings_markdown(model)
    assert "no_delayed_policy_update at 10,000 steps (one-sided: ahead): 30" in text and "**differs**" in text
    assert "for differs (no equivalence claims)" in text
    (entry,) = env_json(model.envs[0], "td3")["outcomes"]["final_window"]["earlier_budgets"]
    assert entry["hypothesis"] == ahead and entry["verdict"] == DIFFERS and entry["p_adjusted"] == 3 / 1024
    assert entry["ci"][1] is None and entry["name"] == early.name
    assert "Claims rule `differs` (declared by the plan)" in model.guarantee


def test_an_earlier_budget_in_the_other_direction_is_unresolved():
    data = curve_study(["td3", "no_delayed_policy_update"], _ahead_early)
    plan = _plan(earlier_budgets=[{"budget": 10000, "variant": "no_delayed_policy_update", "alternative": "less"}])
    (early,) = build_model(data, plan, plan, "td3", 50, 0).envs[0].outcome("final_window").earlier
    assert early.name.endswith("(one-sided: behind)")
    assert (early.comparison.p_raw, early.comparison.verdict) == (1.0, UNRESOLVED)


def test_earlier_budgets_need_a_fixed_design():
    with pytest.raises(PlanError, match="earlier_budgets need a fixed design") as error:
        AnalysisPlan.from_dict({"looks": [5, 10], "earlier_budgets": [{"budget": 10, "variant": "x"}]})
    assert "\n" not in str(error.value)


def test_a_new_study_declares_the_partitioned_rule_and_keeps_it_when_resumed(tmp_path):
    resolved = {"Pendulum-v1": {"ablatable_td3": {"n_timesteps": 20000, "gamma": 0.98}}}

    def config(out, **analysis):
        return StudyConfig(envs=["Pendulum-v1"], variants=["td3", "no_clipped_double_q"], seeds=2, out=str(out),
                           analysis=analysis or None)  # fmt: skip

    manifest = open_manifest(config(tmp_path / "new"), resolved, {})
    assert manifest["analysis"]["claims"] == DEFAULT_CLAIMS == "partitioned"
    assert AnalysisPlan.from_dict(manifest["analysis"]).claim_rule == "partitioned"
    digest = manifest["analysis_declared"]["digest"]
    assert open_manifest(config(tmp_path / "new"), resolved, {})["analysis_declared"]["digest"] == digest
    # a study file that names a rule declares that one
    assert open_manifest(config(tmp_path / "own", claims="differs"), resolved, {})["analysis"]["claims"] == "differs"


def test_committed_plans_keep_their_rule_digest_and_verdicts():
    for path in sorted(STUDIES.glob("**/study.json")):
        manifest = json.loads(path.read_text())
        plan = AnalysisPlan.from_dict(manifest["analysis"])
        # a plan declared before claims existed reads as the rule it was analysed under; one that declares it, as declared
        assert plan.claim_rule == manifest["analysis"].get("claims", "differs-and-equivalent"), path
        assert plan.to_dict() == manifest["analysis"], path
    hopper = json.loads((STUDIES / "hopper-paper-300k" / "study.json").read_text())
    assert plan_digest(hopper["design"], hopper["analysis"]) == hopper["analysis_declared"]["digest"]
    # the verdicts and adjusted p-values of a committed report, recomputed under its plan
    data = load_study(STUDIES / "pendulum")
    plan = AnalysisPlan.from_dict(data.manifest["analysis"])
    committed = json.loads((STUDIES / "pendulum" / "report.json").read_text())["envs"]["Pendulum-v1"]["outcomes"]
    for outcome in build_model(data, plan, plan, "td3", 20, 0).envs[0].outcomes:
        for variant, c in outcome.comparisons.items():
            old = committed[outcome.outcome.key]["variants"][variant]
            # the test's own verdict (report.json's verdict is the one shown, e.g. "cannot tell: ..." at the ceiling)
            assert (old.get("test_verdict", old["verdict"]), old["p_adjusted"], old["p_equivalence_adjusted"]) == (
                c.verdict,
                None if np.isnan(c.p_adjusted) else c.p_adjusted,
                None if np.isnan(c.p_equivalence_adjusted) else c.p_equivalence_adjusted,
            ), (outcome.outcome.key, variant)


def test_the_hopper_1m_plan_reports_its_300k_hypothesis_in_its_family():
    # the committed plan of hopper_paper_1m (claims: differs, TD3 - DP ahead at 300k), on curves whose answer is known
    study = yaml.safe_load((ROOT / "sb3_ablation" / "study_files" / "hopper_paper_1m.yml").read_text())
    plan = AnalysisPlan.from_dict(study["analysis"])

    def returns(variant, seed, steps):
        ahead = (variant == "no_delayed_policy_update") * np.where((steps >= 270_000) & (steps <= 300_000), 500.0, 0.0)
        return 3000.0 + 10.0 * seed + ahead + (variant == "no_clipped_double_q") * (seed - 4.5)

    data = curve_study(study["variants"], returns, seeds=10, env="Hopper-v5", budget=1_000_000, eval_freq=5_000)
    model = build_model(data, plan, plan, "td3", 20, 0)
    primary = model.envs[0].outcome("final_window")
    (early,) = primary.earlier
    assert early.name == "no_delayed_policy_update at 300,000 steps (one-sided: ahead)"
    # the window of 270k-300k (7 evaluations) is 500 ahead on each of the 10 seeds; one family of 4 (Holm)
    assert early.comparison.differences == (500.0,) * 10 and early.comparison.family_size == 4
    assert (early.comparison.p_raw, early.comparison.p_adjusted, early.comparison.verdict) == (1 / 1024, 4 / 1024, DIFFERS)
    assert primary.margin.how == NO_MARGIN_PLANNED and all(c.verdict == UNRESOLVED for c in primary.comparisons.values())
    assert "no_delayed_policy_update at 300,000 steps (one-sided: ahead): 500.0" in findings_markdown(model)
    # every arm at 300k, described beside the hypothesis: the window means, and each variant's paired estimate with its
    # two-sided interval (Hodges-Lehmann and the exact Wilcoxon interval: 500 on every seed; clipped double Q's
    # differences seed - 4.5 are symmetric about 0)
    (described,) = primary.earlier_estimates
    assert described.budget == 300_000 and set(described.means) == set(study["variants"])
    assert described.means["no_delayed_policy_update"] - described.means["td3"] == 500.0
    assert described.estimates["no_delayed_policy_update"] == (10, 500.0, 500.0, 500.0)
    n, estimate, low, high = described.estimates["no_clipped_double_q"]
    assert (n, estimate) == (10, 0.0) and low < 0.0 < high
    assert "td3" not in described.estimates and "At 300,000 steps on the same runs (descriptive" in findings_markdown(model)
    (as_json,) = env_json(model.envs[0], "td3")["outcomes"]["final_window"]["earlier_budget_estimates"]
    assert as_json["descriptive"] and as_json["estimates"]["no_delayed_policy_update"] == {
        "n": 10,
        "estimate": 500.0,
        "ci": [500.0, 500.0],
    }


def test_a_plan_without_earlier_budgets_describes_none():
    study = yaml.safe_load((ROOT / "sb3_ablation" / "study_files" / "hopper_paper_1m.yml").read_text())
    plan = dataclasses.replace(AnalysisPlan.from_dict(study["analysis"]), earlier_budgets=())
    data = curve_study(
        study["variants"], lambda v, s, t: 3000.0 + s + 0.0 * t, seeds=5, env="Hopper-v5", budget=20_000, eval_freq=5_000
    )
    primary = build_model(data, plan, plan, "td3", 20, 0).envs[0].outcome("final_window")
    assert primary.earlier == () and primary.earlier_estimates == ()
    assert (
        "earlier_budget_estimates"
        not in env_json(build_model(data, plan, plan, "td3", 20, 0).envs[0], "td3")["outcomes"]["final_window"]
    )
