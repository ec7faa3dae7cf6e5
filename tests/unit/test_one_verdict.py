"""One verdict per comparison in every generated text: a comparison the plan's test leaves unresolved is unresolved
everywhere, however its family-of-one interval reads; runs that never learn leave no ``equivalent`` in report.json; the
regimes read in plain words; a factorial effect averaged over floor cells says so, a ``differs`` included."""

import re

import numpy as np
from synthetic_studies import factorial_study, write_pendulum_study

from docs.generate import docs_results
from sb3_ablation.common.io import read_json
from sb3_ablation.study import write_report
from sb3_ablation.study.analyse.budget import AT_CEILING
from sb3_ablation.study.analyse.figure_data import region_variants
from sb3_ablation.study.analyse.inference import DIFFERS, EQUIVALENT, UNRESOLVED, Comparison
from sb3_ablation.study.analyse.learning import factorial_learning
from sb3_ablation.study.analyse.learning_region import AT_FLOOR, AVERAGED_OVER_FLOOR, floor_label
from sb3_ablation.study.analyse.run_fates import study_fates
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.learning_rules import LearningRules
from sb3_ablation.study.render.labels import CANNOT_TELL_CEILING, CANNOT_TELL_FLOOR, DESCRIPTIVE, qualified_verdict

REPS = 200
#: no_delayed_policy_update - td3 per seed: Wilcoxon p 0.0098 with an interval that excludes 0, so a family of one
#: would call it `differs`; in the plan's family of three it is `unresolved`
SHIFTS = (90.0, 75.0, -15.0, 120.0, 105.0, 60.0, -30.0, 135.0, 45.0, 150.0)
#: the fields of report.json that give a verdict as shown (the test's own is `test_verdict`, `verdict_of_test`)
SHOWN = {"verdict", "qualified_verdict", "verdict_shown", "main_verdict_label"}


def shown_verdicts(node, path=""):
    """Every (path, value) of a field of report.json that gives a verdict as the report shows it."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in SHOWN and isinstance(value, str):
                yield f"{path}.{key}", value
            yield from shown_verdicts(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from shown_verdicts(value, f"{path}[{i}]")


def test_an_unresolved_comparison_is_unresolved_in_every_generated_text(tmp_path):
    def td3(seed):
        return -600.0 - 7.0 * seed

    write_pendulum_study(
        tmp_path,
        {
            "td3": td3,
            "no_delayed_policy_update": lambda seed: td3(seed) + SHIFTS[seed],
            "no_target_policy_smoothing": lambda seed: td3(seed) + (300.0 if seed % 2 else -310.0) * (1 + seed % 3),
            "no_clipped_double_q": lambda seed: td3(seed) + (-280.0 if seed % 3 else 290.0) * (1 + seed % 2),
        },
    )
    text = write_report(tmp_path, reps=REPS).read_text()
    report = read_json(tmp_path / "report.json")
    env = report["envs"]["Pendulum-v1"]
    primary = env["outcomes"]["final_window"]["variants"]["no_delayed_policy_update"]
    assert (primary["verdict"], primary["test_verdict"], primary["family_size"]) == (UNRESOLVED, UNRESOLVED, 3)
    # the premise: a family of one (the two-part table's return among the runs that learned) rejects, 0 outside
    learned = env["learning"]["variants"]["no_delayed_policy_update"]["learned"]
    assert learned["test_verdict"] == DIFFERS and learned["ci"][0] > 0 and learned["verdict"] == DESCRIPTIVE
    # report.md and its results page: every line that names it gives it no verdict but unresolved, and no bold
    for page in (text, docs_results.study_page(tmp_path)):
        named = [line for line in page.splitlines() if "no_delayed_policy_update" in line and not line.startswith("Study")]
        assert named and not [line for line in named if re.search(r"\bdiffers\b|\bequivalent\b|\*\*", line)], named
        assert any(UNRESOLVED in line for line in named)
    # report.json: every verdict it shows of this comparison, on any outcome or table, is unresolved or descriptive
    # (its failure rate is another outcome, with its own family: no failures here, "no evidence")
    found = [
        (path, v) for path, v in shown_verdicts(report) if "no_delayed_policy_update" in path and "failure_rate" not in path
    ]
    assert found and {v for _, v in found} <= {UNRESOLVED, DESCRIPTIVE}, found
    summary = "\n".join(report["summary"]["per_task"])
    assert not [line for line in summary.splitlines() if "no_delayed_policy_update" in line and "**" in line]


def test_two_of_ten_seeds_that_never_learn_leave_no_equivalent_in_report_json(tmp_path):
    """Seeds 3 and 7 never learn in either arm; the variant is td3 within ±0.5 on every seed, which the test alone
    calls `equivalent`: the report withholds it (failures in an arm), in report.json as everywhere."""

    def td3(seed):
        return -1250.0 - seed if seed in (3, 7) else -400.0 - 2.0 * seed

    write_pendulum_study(tmp_path, {"td3": td3, "no_clipped_double_q": lambda seed: td3(seed) + (0.5 if seed % 2 else -0.5)})
    text = write_report(tmp_path, reps=REPS).read_text()
    report = read_json(tmp_path / "report.json")
    primary = report["envs"]["Pendulum-v1"]["outcomes"]["final_window"]["variants"]["no_clipped_double_q"]
    assert primary["test_verdict"] == EQUIVALENT and primary["verdict"] == "unresolved (failures in an arm)"
    shown = list(shown_verdicts(report))
    assert shown and not [(path, v) for path, v in shown if v.startswith(EQUIVALENT)], shown
    rows = [line for line in text.splitlines() if line.startswith("| no_clipped_double_q")]
    assert rows and not [line for line in rows if "equivalent" in line], rows
    assert "**equivalent** within the margin" not in text
    # the findings open with the regime: td3 learned in 8 of its 10 runs
    findings = text.split("## Findings")[1].split("## Pendulum-v1")[0]
    first = next(line for line in findings.splitlines() if line.startswith("- "))
    assert "td3 learned in 8 of 10 runs" in first
    # one definition of a failed run: the failures table counts what 'Where TD3 learns' counts
    assert "| td3 | 2/10 (20%)" in text and "by the rules of 'Where TD3 learns'" in text
    assert report["envs"]["Pendulum-v1"]["failures"]["rules"] == "learning"


def test_a_baseline_that_rarely_learns_comes_first_in_the_findings(tmp_path):
    """TD3 learns in 3 of 10 runs: the task's findings open by saying so, before any verdict."""

    def td3(seed):
        return -400.0 if seed < 3 else -1250.0 - seed

    write_pendulum_study(tmp_path, {"td3": td3, "no_replay_buffer": lambda seed: -300.0 - seed})
    text = write_report(tmp_path, reps=REPS).read_text()
    findings = text.split("<!-- generated:findings:start -->")[1].split("<!-- generated:findings:end -->")[0]
    first = next(line for line in findings.splitlines() if line.startswith("- "))
    assert "td3 learned in 3 of 10 runs: these comparisons say little" in first
    assert findings.index("these comparisons say little") < findings.index("differs")
    # the error control is the Method's, not the findings'
    method = text.split("## Method")[1]
    assert "share one family-wise error rate" in method and "share one family-wise error rate" not in findings


def test_the_regimes_read_in_plain_words_and_a_differs_over_floor_cells_says_so():
    assert qualified_verdict(EQUIVALENT, AT_CEILING) == CANNOT_TELL_CEILING
    assert qualified_verdict(EQUIVALENT, AT_FLOOR) == CANNOT_TELL_FLOOR
    assert qualified_verdict(EQUIVALENT, AVERAGED_OVER_FLOOR) == "unresolved (averaged over floor cells)"
    assert qualified_verdict(DIFFERS, AVERAGED_OVER_FLOOR) == "differs (averaged over floor cells)"
    assert qualified_verdict(DIFFERS, AT_CEILING) == DIFFERS and qualified_verdict(UNRESOLVED, AT_FLOOR) == UNRESOLVED
    assert qualified_verdict(EQUIVALENT, "at floor on Hopper-v5") == "equivalent (neither arm learns on Hopper-v5)"


def _hopper_like(switches, seed):
    """Nothing learns without A; with A on, removing B costs 300 on every seed (a clear `differs` everywhere)."""
    if not switches["target_networks"]:
        return -1300.0 + seed
    return -200.0 - 2.0 * seed - (0.0 if switches["clipped_double_q"] else 300.0)


def test_a_factorial_main_effect_over_floor_cells_is_labelled_and_its_curves_show_the_region():
    data = factorial_study(["target_networks", "clipped_double_q", "delayed_policy_update"], _hopper_like)
    plan, rules = AnalysisPlan(), LearningRules()
    fates = study_fates(data, "Pendulum-v1", rules, plan)
    learning = factorial_learning(data, "Pendulum-v1", fates, plan, rules, margin=50.0)
    assert learning is not None and learning.region.enabling == ("target_networks",)
    effect = Comparison(
        name="clipped_double_q", n=10, effect=150.0, ci=(140.0, 160.0), sd=5.0, p_raw=0.002, p_adjusted=0.004,
        p_equivalence=1.0, p_equivalence_adjusted=1.0, margin=50.0, alpha=0.05, family_size=3, mde=10.0,
        seeds_needed=None, verdict=DIFFERS, test="wilcoxon",
    )  # fmt: skip
    label = floor_label(effect, learning.region)
    assert qualified_verdict(effect.verdict, label) == "differs (averaged over floor cells)"
    # the learning curves: the baseline and the four cells with target networks on, not the four flat dead cells
    variant_of = {"".join("+" if c[f] else "-" for f in learning.design.factors): v for v, c in _cells(learning)}
    shown = region_variants(learning, variant_of, "td3")
    assert shown is not None and shown[0] == "td3" and len(shown) == 4
    assert all(not name.startswith("no_target_networks") and "no_target_networks" not in name for name in shown)
    assert np.all([learning.design.signs[row, 0] > 0 for row in learning.region.rows])


def _cells(learning):
    from sb3_ablation.study.plan.variants import canonical_name

    return [(canonical_name(dict(cell)), cell) for cell in learning.design.cells]


def _declare(out, analysis):
    """Give a written study the analysis plan it declared (study.json's ``analysis``)."""
    from sb3_ablation.common.io import write_json_atomic

    manifest = read_json(out / "study.json")
    write_json_atomic(out / "study.json", {**manifest, "analysis": analysis})


def _clean_pair(seed):
    """td3 learns on every seed, far below the ceiling (a failure would cost about 760); the variant within ±0.5."""
    return -400.0 - 2.0 * seed


def test_a_partitioned_plan_withholds_an_equivalence_its_seeds_cannot_guard_and_a_differs_plan_names_no_equivalence(
    tmp_path,
):
    finals = {"td3": _clean_pair, "no_clipped_double_q": lambda seed: _clean_pair(seed) + (0.5 if seed % 2 else -0.5)}
    partitioned, differs = tmp_path / "partitioned", tmp_path / "differs"
    for out, claims in ((partitioned, "partitioned"), (differs, "differs")):
        write_pendulum_study(out, finals)
        _declare(out, {"claims": claims})
    # partitioned: the test calls it equivalent; 10 clean seeds cannot bound a failure rate that would cost the margin
    text = write_report(partitioned, reps=REPS).read_text()
    report = read_json(partitioned / "report.json")
    primary = report["envs"]["Pendulum-v1"]["outcomes"]["final_window"]["variants"]["no_clipped_double_q"]
    assert primary["test_verdict"] == EQUIVALENT
    assert re.fullmatch(
        r"cannot tell: 10 seeds cannot rule out rare failures that would cost the margin; \d+ seeds without a failure "
        r"would",
        primary["verdict"],
    )
    assert not [(path, v) for path, v in shown_verdicts(report) if v.startswith(EQUIVALENT)]
    assert primary["verdict"] in text and "**equivalent**" in text.split("## Verdicts and error control")[1]
    # differs: the legend lists only the verdicts the plan can give
    text = write_report(differs, reps=REPS).read_text()
    legend = text.split("## Verdicts and error control")[1].split("\n#")[0]
    assert "**differs**" in legend and "equivalent" not in legend.split("Claims rule")[0]
    assert "the plan makes no equivalence claims" in legend


def test_a_committed_study_report_links_the_glossary_and_one_elsewhere_names_it(tmp_path):
    from sb3_ablation.study.render.report import glossary_line

    committed = tmp_path / "docs" / "studies" / "one"
    committed.mkdir(parents=True)
    (tmp_path / "docs" / "glossary.md").write_text("# Glossary\n")
    line = glossary_line("Holm over the family; Wilcoxon signed-rank, HL estimate; pocock looks", committed)
    assert line[0] == (
        "Terms used here (family, Wilcoxon, HL, look, Pocock) are explained in plain words in the student "
        "[glossary](../../glossary.md)."
    )
    assert glossary_line("the family's IQM", tmp_path / "elsewhere")[0].endswith("student glossary (docs/glossary.md).")
    assert glossary_line("nothing the glossary explains; a thl", tmp_path) == []
