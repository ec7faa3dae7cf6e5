"""The README's answer (docs/generate/readme_answer.py) follows the committed reports: one row per (condition, component) on
the removal convention, the answer chosen by its declared rule, replicates side by side with their seeds, plan phrases from
report.json, a smallest set called confirmed only by a test, and the fields other analyses add (``learning``) used
where a report has them. Each test edits a copy of the committed report.json files."""

import json
from pathlib import Path

from docs.generate import readme_answer
from docs.generate.report_fields import AMENDED_TITLE, estimate_name, plan_phrase

WILCOXON = "Wilcoxon signed-rank test (Hodges-Lehmann estimate, exact interval); equivalence: TOST with the sign-flip"


def _edit(studies: Path, folder: str, change) -> None:
    path = studies / folder / "report.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _without_learning(data: dict) -> None:
    """A report as written before the learning analysis: no ``learning`` keys, no qualified verdicts."""
    for env in data["envs"].values():
        env.pop("learning", None)
        for outcome in env["outcomes"].values():
            for entry in [*outcome["variants"].values(), *(outcome.get("sequential") or {}).get("decisions", {}).values()]:
                entry.pop("qualified_verdict", None)
    for section in data["sections"].values():
        if isinstance(section, dict):
            section.pop("learning", None)


def _row(text: str, heading: str, component: str) -> str:
    """The table row of ``component`` under the condition whose heading starts with ``heading``."""
    block = text.split(f"**{heading}")[1].split("\n**")[0]
    return next(line for line in block.splitlines() if line.startswith(f"| {component} |"))


def test_estimates_are_named_for_their_test():
    assert estimate_name(WILCOXON) == "HL"
    assert estimate_name("sign-flip permutation test of the mean; equivalence: TOST with the Wilcoxon") == "mean"
    assert estimate_name("sign-flip permutation test of the 20% trimmed mean") == "trimmed mean"


def test_plan_phrases_follow_the_manifest_record():
    assert plan_phrase({"plan_declared": {"finished_runs": 0, "at": "2026-11-25T07:01:10+0000"}}) == (
        "plan declared before the first run (2026-11-25)"
    )
    late = plan_phrase({"plan_declared": {"finished_runs": 40}})
    assert late == "plan fixed after 40 runs had finished: a re-analysis, not a confirmatory test"
    amended = plan_phrase({
        "plan_declared": {"finished_runs": 0},
        "sections": {AMENDED_TITLE: {"versions": [
            {"finished_runs": 0, "changes": []},
            {"finished_runs": 640, "changes": ["equivalence_test: signflip -> wilcoxon"]},
        ]}},
        "provenance": {"reused": [{"run": 1}, {"run": 2}]},
    })  # fmt: skip
    assert "amended after 640 runs (equivalence_test: signflip -> wilcoxon)" in amended
    assert "2 of whose runs reproduce an earlier study's" in amended
    reused_first = plan_phrase({"plan_declared": {"finished_runs": 40}, "provenance": {"reused": [{"run": 1}]}})
    assert reused_first.startswith("plan fixed after 40 runs had finished (reused from an earlier study)")


def test_the_committed_answer_reads_one_convention(studies):
    """Rows are 'removed minus TD3'; factorial main effects ('with minus without') appear flipped, in the detail."""
    text = readme_answer.tables()
    row = _row(text, "Pendulum-v1, 20k", "target_networks")
    assert row.startswith("| target_networks | **differs** HL -88 [-136, -37] (pendulum-sequential, seeds 10-19) |")
    assert "pendulum (seeds 0-9): **differs** HL -27" in row and "pendulum-tuned (seeds 0-9): **differs** HL -283" in row
    assert "Kruskal-Wallis" not in row  # studies that share seeds: side by side, no test of independent samples
    cheetah = _row(text, "HalfCheetah-v5, 100k", "clipped_double_q")
    # a replication's seeds are outside the plan's family: an estimate, never a verdict
    assert "multitask, replication (seeds 10-19): descriptive HL -552" in cheetah
    assert "of the effect recovered" not in text and "Yates" not in text
    detail = readme_answer.detail()
    # the 2^6 main effects, flipped, each labelled where it averages over cells where TD3 never learns (no bold)
    assert "replay_buffer differs (averaged over floor cells) -1,212" in detail
    assert "target_policy_smoothing unresolved (averaged over floor cells) -11" in detail


def test_the_answer_is_chosen_by_the_declared_rule(studies):
    """The study declared before its first run answers; if it was not, the next one that was (then most seeds)."""
    assert "(pendulum-sequential, seeds 10-19)" in _row(readme_answer.tables(), "Pendulum-v1, 20k", "target_networks")
    _edit(studies, "pendulum-sequential", lambda d: d["plan_declared"].update(finished_runs=70))
    row = _row(readme_answer.tables(), "Pendulum-v1, 20k", "target_networks")
    assert "(pendulum-2x6, seeds 0-9)" in row.split("|")[2]
    assert "pendulum-sequential (seeds 10-19): **differs** HL -88" in row


def test_a_changed_report_changes_the_row(studies):
    def change(data):
        entry = data["envs"]["Hopper-v5"]["outcomes"]["final_window"]["variants"]["no_clipped_double_q"]
        entry.update(
            verdict="differs", qualified_verdict="differs", test_verdict="differs", label=None, effect=-400.0,
            ci=[-600.0, -200.0],
        )  # fmt: skip
        auc = data["envs"]["Hopper-v5"]["outcomes"]["auc"]["variants"]["no_clipped_double_q"]
        auc.update(
            verdict="descriptive", qualified_verdict="descriptive", test_verdict="differs", effect=+50.0, ci=[10.0, 90.0]
        )

    _edit(studies, "multitask", change)
    row = _row(readme_answer.tables(), "Hopper-v5, 100k", "clipped_double_q")
    assert "**differs** HL -400 [-600, -200]" in row
    assert row.endswith("| area under the curve: HL +50 [+10, +90] |")  # the other direction: shown, descriptive


def test_secondary_outcomes_shown_only_where_they_disagree():
    primary = {"verdict": "equivalent", "effect": -1.0}
    assert readme_answer.disagrees(primary, {"verdict": "differs", "effect": 100.0}, "auc")
    assert not readme_answer.disagrees(primary, {"verdict": "equivalent", "effect": 2.0}, "auc")
    assert not readme_answer.disagrees(primary, {"verdict": "unresolved", "effect": 50.0}, "auc")
    harm = {"verdict": "differs", "effect": -80.0}
    assert readme_answer.disagrees(harm, {"verdict": "differs", "effect": 30.0}, "last")
    assert not readme_answer.disagrees(harm, {"verdict": "differs", "effect": 30.0}, "overestimation")


def test_the_smallest_set_is_confirmed_only_by_a_test(studies):
    assert "**replay_buffer, target_networks**" in readme_answer.detail()
    assert "**not confirmed** by the equivalence test" in readme_answer.detail().split("Hopper-v5** (")[1]

    def untested(data):
        keep = data["sections"]["Hopper-v5: factorial analysis"]["outcomes"]["final_window"]["smallest_sufficient_set"]
        keep.pop("confirmation")

    _edit(studies, "hopper-half-fraction", untested)
    hopper = readme_answer.detail().split("Hopper-v5** (")[1].split("\n\n**")[0]
    assert "confirmed" not in hopper and "not tested" in hopper

    def tested(data):
        keep = data["sections"]["Hopper-v5: factorial analysis"]["outcomes"]["final_window"]["smallest_sufficient_set"]
        keep.update(
            confirmed=False,
            confirmation={"verdict": "unresolved", "ci": [-349.0, 253.0], "p_equivalence_adjusted": 0.28},
        )

    _edit(studies, "hopper-half-fraction", tested)
    hopper = readme_answer.detail().split("Hopper-v5** (")[1].split("\n\n**")[0]
    assert (
        "**not confirmed** by the equivalence test of its own cell against TD3 [-349, +253], equivalence p adjusted 0.28"
        in hopper
    )


def test_the_learning_fields_are_used_where_a_report_has_them(studies):
    """Budget progress, failure rates with their test and the ceiling label come from ``learning`` when present;
    without it the answer falls back to what the report has."""
    for folder in ("pendulum-sequential", "pendulum", "pendulum-tuned", "pendulum-2x6"):
        _edit(studies, folder, _without_learning)
    row = _row(readme_answer.tables(), "Pendulum-v1, 20k", "clipped_double_q")
    assert "| 0/20 vs 0/20 |" in row  # the verdict shown is report.json's own, learning fields or not

    def learned(data):
        data["envs"]["Pendulum-v1"]["learning"] = {
            "did_not_learn": {"threshold": -1165.5, "how": "rule text", "learning_fraction": 0.05},
            "budget": {"td3_mean": -150.0, "fraction": 0.99, "random": -1218.9, "reference": -151.9,
                       "reference_budget": 20000},
            "ceiling": {"at_ceiling": True},
            "variants": {"no_clipped_double_q": {"failure_rate": {
                "variant": {"failed": 3, "n": 20}, "baseline": {"failed": 0, "n": 20}, "p_adjusted": 0.25,
                "verdict": "no evidence",
            }}},
        }  # fmt: skip

    _edit(studies, "pendulum-sequential", learned)
    text = readme_answer.tables()
    row = _row(text, "Pendulum-v1, 20k", "clipped_double_q")
    assert row.startswith("| clipped_double_q | cannot tell: both arms solve the task at this budget HL +1.2")
    assert "| 3/20 vs 0/20 (no evidence, exact p adjusted 0.25) |" in row
    heading = text.split("**Pendulum-v1, 20k")[1].split("\n")[0]
    assert "-150.0 (pendulum-sequential) is 99% of the way" in heading and "**At ceiling**" in heading
    assert "below -1,165.5 (the measured random return plus 5% of the span to the reference)" in heading


def test_the_papers_rows_stand_beside_the_answer():
    """The Results page's Table 2 comparison shows each condition's answer (its verdict and named estimate), one paper
    column per task."""
    from docs.generate import docs_results

    lines = docs_results.paper_lines()
    header = next(line for line in lines if line.startswith("| component removed |"))
    assert header.count("paper, Hopper, 1M") == 1 and "Hopper-v5, 300k, the TD3 paper's hyperparameters" in header
    row = "| delayed_policy_update | -897 | unresolved HL -53 | unresolved HL +757 | unresolved HL +354 | +58 | "
    row += "unresolved HL -73 |"
    assert row in lines


def test_a_factorials_learning_region_is_shown_where_its_report_has_it(studies):
    """With the factorial's ``learning`` key: the region, the effects within it (flipped to removal) in the README
    and the detail, and the main effects' verdicts as the analysis gives them; without it, none of that."""
    for folder in ("pendulum-2x6", "hopper-half-fraction"):
        _edit(studies, folder, _without_learning)
    assert "learning region" not in readme_answer.tables()

    def learned(data):
        section = data["sections"]["Hopper-v5: factorial analysis"]
        effect = {"verdict": "unresolved", "effect": 39.9, "ci": [-194.0, 146.0], "test": WILCOXON}
        section["learning"] = {
            "region": {"enabling": ["replay_buffer", "target_networks"], "n_cells": 8, "design_cells": 32},
            "factors": {"deterministic_policy": {"conditional": effect}},
        }
        section["outcomes"]["final_window"]["main_effects"]["deterministic_policy"]["verdict_shown"] = "unresolved (at floor)"

    _edit(studies, "hopper-half-fraction", learned)
    text, detail = readme_answer.tables(), readme_answer.detail()
    assert "Within the learning region of hopper-half-fraction (Hopper-v5):" in text
    expected = "- removed within the learning region (sign flipped): deterministic_policy unresolved HL -40 [-146, +194]."
    assert expected in text and expected in detail
    assert "- learning region: 8 of 32 cells, those with replay_buffer and target_networks on (found" in detail
    assert "deterministic_policy unresolved (at floor) -38" in detail
