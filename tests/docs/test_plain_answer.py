"""The answer in plain words (docs/generate/plain_answer.py): the README's block stays within its size and opens with the
summary table; every generated page gives a comparison the verdict its report shows (one function reads it), in bold
only where it is one; each sentence carries the estimate, its share of TD3's progress, the detectable difference at
the design's boundary, the along-training clause where a report has it and the mechanism, descriptive; the resumed runs
are named where their study is presented; the figures are the ones the reports give. Each test that changes a report
edits a copy of the committed report.json files."""

import json
import shutil
from pathlib import Path

from docs.generate import answer_key, docs_results, plain_answer, readme_answer
from docs.generate.report_fields import BOTH_SOLVE, NEITHER_LEARNS, emphasised, shown_verdict

ROOT = Path(__file__).resolve().parents[2]

SECTION = "## What the committed studies say"


def _edit(studies: Path, folder: str, change) -> None:
    path = studies / folder / "report.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _sentence(text: str, title: str, switch: str) -> str:
    """The sentence of ``switch`` under the condition heading that starts with ``title``."""
    block = text.split(f"### {title}")[1].split("\n### ")[0]
    return next(line for line in block.splitlines() if line.startswith(f"- **{switch}**"))


def _cell(text: str, switch: str, column: int) -> str:
    row = next(line for line in text.splitlines() if line.startswith(f"| {switch} |"))
    return row.split(" | ")[column].strip(" |")


def test_the_readmes_answer_section_is_short_and_opens_with_the_table():
    readme = (ROOT / "README.md").read_text()
    section = readme.split(SECTION)[1].split("\n## ")[0]
    assert len((SECTION + section).encode()) <= plain_answer.README_LIMIT
    first = next(line for line in section.splitlines() if line.startswith("|"))
    assert first.startswith("| removed | Hopper 100k, zoo | Hopper 300k, paper |")
    assert len(readme.encode()) < 14 * 1024


def test_the_results_page_answers_for_hopper_on_its_first_screen():
    page = (ROOT / "docs" / "results" / "index.md").read_text()
    first_screen = "\n".join(page.splitlines()[:30])
    assert "| removed | Hopper 100k, zoo | Hopper 300k, paper |" in first_screen
    assert "**Hopper-v5.** At 100k steps" in first_screen and "At 300k steps, the paper's settings" in first_screen


def test_shown_verdicts_read_in_plain_words_and_only_verdicts_are_bold():
    assert shown_verdict({"verdict": "equivalent", "qualified_verdict": "equivalent (at ceiling)"}) == BOTH_SOLVE
    assert shown_verdict({"verdict": "equivalent", "qualified_verdict": "equivalent (at floor)"}) == NEITHER_LEARNS
    at_ceiling = {"learning": {"ceiling": {"at_ceiling": True}}}
    assert shown_verdict({"verdict": "equivalent"}, at_ceiling) == BOTH_SOLVE
    assert shown_verdict({"verdict": "equivalent"}, {}) == "equivalent"
    # a sequential design's decision is its verdict
    assert shown_verdict({"verdict": "differs"}, None, {"verdict": "unresolved"}) == "unresolved"
    assert [emphasised(v) for v in ("differs", "equivalent", "unresolved", BOTH_SOLVE, "unresolved (at floor)")] == [
        "**differs**",
        "**equivalent**",
        "unresolved",
        BOTH_SOLVE,
        "unresolved (at floor)",
    ]


def test_an_unresolved_comparison_whose_interval_excludes_0_gets_no_other_verdict(studies):
    """Under the plan: unresolved; its family-of-one interval excludes 0 and a secondary outcome's own test differs.
    No generated text gives it another verdict, nor bold."""

    def unresolved(data, env, variant):
        outcomes = data["envs"][env]["outcomes"]
        outcomes["final_window"]["variants"][variant].update(
            verdict="unresolved", qualified_verdict="unresolved", test_verdict="unresolved", label=None, effect=-150.0,
            ci=[-300.0, -50.0], p_raw=0.002,
        )  # fmt: skip
        # a secondary outcome's own test differs; the report shows it as descriptive
        outcomes["auc"]["variants"][variant].update(
            verdict="descriptive", qualified_verdict="descriptive", test_verdict="differs", effect=-90.0
        )

    _edit(studies, "multitask", lambda d: unresolved(d, "Hopper-v5", "no_target_networks"))
    _edit(studies, "pendulum", lambda d: unresolved(d, "Pendulum-v1", "no_target_networks"))
    readme, results = plain_answer.readme_block(), plain_answer.results_section()
    assert _cell(readme, "target_networks", 1) == "unresolved -150"
    assert "removing replay_buffer lowers the return (**differs**)" in readme.split("**Hopper-v5.**")[1]
    sentence = _sentence(results, "Hopper-v5, 100k", "target_networks")
    assert "Verdict: unresolved: the plan's test detected no difference" in sentence
    assert "differs" not in sentence and sentence.count("**") == 2  # only the component's name is bold
    row = next(
        line for line in readme_answer.tables().split("**Hopper-v5, 100k")[1].splitlines() if "| target_networks |" in line
    )
    assert row.split(" | ")[1].startswith("unresolved HL -150 [-300, -50]") and "**" not in row
    key = answer_key.page().split("### target_networks")[1].split("\n### ")[0]
    # the key's answer and model answer are the edited comparison's (the README's line beside it is another study's)
    committed = next(line for line in key.splitlines() if line.startswith("- **The committed answer**"))
    assert "differs" not in committed and 'MY_VERDICT = "unresolved"' in key
    assert "mean return over the final 10% of training: unresolved, -150.0 [-300.0, -50.0]" in key


def test_a_regime_case_reads_cannot_tell_everywhere(studies):
    def at_floor(data):
        entry = data["envs"]["Hopper-v5"]["outcomes"]["final_window"]["variants"]["no_delayed_policy_update"]
        entry.update(verdict="equivalent", qualified_verdict="equivalent (at floor)")

    _edit(studies, "multitask", at_floor)
    assert _cell(plain_answer.readme_block(), "delayed_policy_update", 1) == "cannot tell: neither learns -53"
    sentence = _sentence(plain_answer.results_section(), "Hopper-v5, 100k", "delayed_policy_update")
    assert f"Verdict: {NEITHER_LEARNS}." in sentence and "equivalent" not in sentence
    assert "delayed_policy_update: cannot tell: neither arm learns" in plain_answer.readme_block()


def test_a_sentence_gives_the_estimate_its_share_what_the_seeds_could_detect_and_the_mechanism():
    results = plain_answer.results_section()
    delay = _sentence(results, "Hopper-v5, 300k", "delayed_policy_update")
    assert "by HL +757 [+241, +1,278], +70% [+22%, +118%] of TD3's progress from the random policy (1,087)" in delay
    assert "(hopper-paper-300k, seeds 0-19). Verdict: unresolved" in delay
    assert "Along training (removed minus TD3, simultaneous 95% band over the steps; descriptive): ahead at 25,000" in delay
    cdq = _sentence(results, "Hopper-v5, 300k", "clipped_double_q")
    assert (
        "Overestimation at the end (critic 1's Q minus the discounted return, removed minus TD3; descriptive): HL +198" in cdq
    )
    assert "td3 seeds 10-19 from step 50,000" in results.split("### Hopper-v5, 300k")[1].split("\n### ")[0]


def test_a_sequential_designs_detectable_difference_is_at_its_last_boundary():
    """The report's ``mde`` of a sequential comparison is at its share of alpha, as for one look; the design's last
    boundary is stricter, so the difference its seeds detect is larger. A fixed design's is the report's."""
    sequential = next(c for c in readme_answer.CONDITIONS if c.sources[0].folder == "hopper-paper-300k")
    finding = next(f for f in plain_answer.findings(sequential) if f.switch == "delayed_policy_update")
    assert plain_answer.detectable(finding.measured, finding.variant) > finding.entry["mde"] * 1.05
    fixed = next(c for c in readme_answer.CONDITIONS if c.sources[0].folder == "multitask")
    finding = plain_answer.findings(fixed)[0]
    assert plain_answer.detectable(finding.measured, finding.variant) == finding.entry["mde"]


def test_the_along_training_clause_is_used_where_a_report_has_it(studies):
    def along(data):
        data["envs"]["Hopper-v5"]["along_training"] = {
            "comparisons": {
                "no_delayed_policy_update": {"where": "ahead from 25,000 to 300,000 steps"},
                "no_target_policy_smoothing": {"where": "not detected at any step (simultaneous 95% band)"},
            }
        }

    _edit(studies, "hopper-paper-300k", along)
    results = plain_answer.results_section()
    delay = _sentence(results, "Hopper-v5, 300k", "delayed_policy_update")
    assert delay.endswith("; descriptive): ahead from 25,000 to 300,000 steps. Overestimation at the end (critic 1's Q "
                          "minus the discounted return, removed minus TD3; descriptive): HL -13 [-38, +19].")  # fmt: skip
    smoothing = _sentence(results, "Hopper-v5, 300k", "target_policy_smoothing")
    assert "over the steps; descriptive): not detected at any step. Overestimation" in smoothing
    assert "Along training" not in _sentence(results, "Hopper-v5, 300k", "clipped_double_q")


def test_the_figures_are_the_ones_the_reports_give(tmp_path, monkeypatch):
    assert plain_answer.main(["--check"]) == 0
    stale = tmp_path / "figures"
    shutil.copytree(plain_answer.FIGURES, stale)
    (stale / "answer-hopper-300k-paper.png").write_bytes(b"not this figure")
    monkeypatch.setattr(plain_answer, "FIGURES", stale)
    assert plain_answer.main(["--check"]) == 1


def test_a_study_page_names_its_resumed_runs():
    page = docs_results.study_page(ROOT / "docs" / "studies" / "hopper-paper-300k")
    assert (
        "Runs resumed from a checkpoint (their records' `resumed_from`): Hopper-v5: td3 seeds 10-19 from step 50,000." in page
    )
    assert "resumed" not in docs_results.study_page(ROOT / "docs" / "studies" / "pendulum").split("\n## ")[0]
