"""The 1M study beside the paper and the 300k study (docs/generate/paper_budgets.py): nothing before its report exists;
then one row per source with each verdict as its report gives it (the declared 300k hypothesis's verdict, the other arms
at 300k described, never in a verdict's words), and one reading per component that follows the 1M verdict and interval.
The 1M report here is the committed 300k report edited to known verdicts, in place of the committed 1M report."""

import copy
import json
import shutil

from docs.generate import docs_results, paper_budgets, plain_answer

DP, TPS, CDQ = paper_budgets.VARIANTS


def _one_m(studies) -> dict:
    """A 1M report built from the 300k one: DP differs against the paper, TPS differs on its side, CDQ unresolved."""
    data = json.loads((studies / paper_budgets.THREE_HUNDRED_K / "report.json").read_text())
    env = data["envs"]["Hopper-v5"]
    env["seeds"] = list(range(20, 30))
    outcome = env["outcomes"]["final_window"]
    outcome.pop("sequential", None)
    base = outcome["variants"][DP]
    known = {DP: ("differs", 640.0, [210.0, 1100.0]), TPS: ("differs", -950.0, [-1500.0, -400.0])}
    known[CDQ] = ("unresolved", -120.0, [-1600.0, 300.0])
    for variant, (verdict, effect, ci) in known.items():
        entry = copy.deepcopy(base)
        entry.update(verdict=verdict, test_verdict=verdict, qualified_verdict=verdict, effect=effect, ci=ci, label=None)
        outcome["variants"][variant] = entry
    h4 = {**copy.deepcopy(base), "verdict": "unresolved", "qualified_verdict": "unresolved", "effect": 300.0}
    outcome["earlier_budgets"] = [{"name": f"{DP} at 300,000 steps", "hypothesis": {"variant": DP, "budget": 300_000}, **h4}]
    outcome["earlier_budget_estimates"] = [
        {
            "budget": 300_000,
            "descriptive": True,
            "means": {"td3": 1000.0, DP: 1300.0, TPS: 980.0, CDQ: 1010.0},
            "estimates": {
                v: {"n": 10, "estimate": e, "ci": [e - 400.0, e + 400.0]} for v, e in [(DP, 300.0), (TPS, -20.0), (CDQ, 10.0)]
            },
        }
    ]
    return data


def test_nothing_is_said_before_the_1m_study_has_a_report(studies):
    shutil.rmtree(studies / paper_budgets.ONE_M)
    assert paper_budgets.section(studies) == [] and paper_budgets.readme_lines(studies) == []


def test_the_table_and_readings_follow_the_1m_report(studies):
    (studies / paper_budgets.ONE_M / "report.json").write_text(json.dumps(_one_m(studies)))
    text = "\n".join(paper_budgets.section(studies))
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 5  # the header and the four sources
    paper, at_1m, at_300k, study_300k = rows[1:]
    assert "| 3,305 | -897 | -912 | -1,467 |" in paper
    assert "seeds 20-29" in at_1m and "**differs** HL +640 [+210, +1,100]" in at_1m and "unresolved HL -120" in at_1m
    # at 300k: the declared hypothesis's verdict, the others described without a verdict's words or bold
    cells = at_300k.split(" | ")
    assert cells[1] == "1,000" and "(declared, one-sided: unresolved)" in cells[2]
    assert all("(descriptive)" in c and "**" not in c and "differs" not in c for c in cells[3:])
    assert "seeds 0-19" in study_300k and "unresolved HL +757 [+241, +1,278]" in study_300k
    readings = {line.split(":")[0]: line for line in text.splitlines() if line.startswith("- ")}
    assert "finding against the paper" in readings["- delayed_policy_update"]
    assert "the budget reading is supported" in readings["- target_policy_smoothing"]
    assert "holds both 0 and the paper's value" in readings["- clipped_double_q"]
    # the README's shorter table has neither the estimate's name nor its interval; both pages carry the table
    short = "\n".join(paper_budgets.readme_lines(studies))
    assert "**differs** +640 |" in short and "[+210" not in short and "HL" not in short
    assert text in "\n".join(docs_results.paper_lines())
    # the README's paragraphs leave the paper's values to the table once it is there (its answer stays within its size)
    readme = plain_answer.readme_block()
    assert short in readme and "the TD3 paper at 1M steps" not in readme


def test_a_paper_sized_loss_outside_the_interval_points_away_from_the_budget():
    entry = {
        "verdict": "unresolved",
        "effect": -50.0,
        "ci": [-400.0, 300.0],
        "test": "Wilcoxon signed-rank test (Hodges-Lehmann estimate, exact interval)",
    }
    line = paper_budgets.reading(CDQ, entry, {}, -1467.43)
    assert "Not a verdict" in line and "points to the networks or a finding against the paper" in line
    assert "**" not in line


def test_an_interval_that_excludes_0_without_a_verdict_is_read_as_an_estimate():
    # the committed 1M report's clipped double Q: unresolved under Holm over 4, its own interval below 0
    entry = {
        "verdict": "unresolved",
        "effect": -1090.2,
        "ci": [-1592.0, -312.2],
        "p_adjusted": 0.1484375,
        "family_size": 4,
        "n": 10,
        "test": "Wilcoxon signed-rank test (Hodges-Lehmann estimate, exact interval)",
    }
    line = paper_budgets.reading(CDQ, entry, {}, -1467.43)
    assert "holds both 0" not in line and "holds the paper's value and not 0" in line
    assert "4 hypotheses" in line and "adjusted p 0.148" in line and "Not a verdict" in line and "**" not in line
