"""The generated answer (sb3_ablation/study/render/answer.py) says what the reports say, and nothing else."""

import json

import pytest

from sb3_ablation.study.render.answer import PAPER_TABLE2, StudyReport, answer_markdown, paper_comparison, verdict_cell
from sb3_ablation.switches import TABLE


def comparison(verdict: str, effect: float, ci: tuple[float, float], n: int = 5, **extra) -> dict:
    return {"verdict": verdict, "effect": effect, "ci": list(ci), "n": n, "reason": None, "seeds_needed": 12} | extra


def write_study(folder, envs: dict[str, dict], sections: dict | None = None, steps: int = 100_000) -> StudyReport:
    """A study folder with a report.json whose primary outcome compares the given variants on each env."""
    report = {
        "plan": {"primary": "final_window", "secondary": [], "alpha": 0.05},
        "envs": {
            env: {
                "training_steps": steps,
                "outcomes": {"final_window": {"name": "mean return at the end", "margin": 10.0, "variants": variants}},
            }
            for env, variants in envs.items()
        },
        "sections": sections or {},
    }
    manifest = {"hyperparams": {env: {"ablatable_td3": {"policy_kwargs": "dict(net_arch=[64, 64])"}} for env in envs}}
    folder.mkdir()
    (folder / "report.json").write_text(json.dumps(report))
    (folder / "study.json").write_text(json.dumps(manifest))
    return StudyReport.read(folder)


def leave_one_out(verdict: str = "unresolved", n: int = 5) -> dict:
    return {switch.variant: comparison(verdict, -float(switch.component), (-9.0, 3.0), n=n) for switch in TABLE}


def test_cells_carry_verdict_effect_ci_and_seeds_needed():
    assert verdict_cell(comparison("differs", -530.94, (-826.0, -235.66))) == "**differs: -530.9 [-826.0, -235.7]**"
    assert verdict_cell(comparison("equivalent", 1.44, (-0.2, 3.1))) == "equivalent: 1.4 [-0.2, 3.1]"
    assert verdict_cell(comparison("unresolved", 64.0, (-51.6, 179.7))) == "unresolved: 64.0 [-51.6, 179.7]; 12 seeds"
    far = comparison("unresolved", 0.1, (-5.0, 5.0), seeds_needed=None)
    assert verdict_cell(far).endswith("; more than 1,000 seeds")
    assert verdict_cell(comparison("unresolved", 1.0, (0, 2), n=2, reason="fewer than 5 pairs")) == (
        "not tested (fewer than 5 pairs)"
    )
    assert verdict_cell(None) == "not run"


def test_table_uses_each_envs_first_leave_one_out_study(tmp_path):
    first = write_study(tmp_path / "a", {"Hopper-v5": leave_one_out("differs", n=10)})
    second = write_study(tmp_path / "b", {"Hopper-v5": leave_one_out("equivalent"), "Pendulum-v1": leave_one_out()})
    partial = write_study(tmp_path / "c", {"Walker2d-v5": {"no_clipped_double_q": comparison("differs", 1, (0, 2))}})
    text = answer_markdown([first, second, partial])
    header = next(line for line in text.splitlines() if line.startswith("| component removed"))
    # one column per env, from the first study that has every leave-one-out comparison on it
    assert header.count("Hopper-v5 (100k steps, [64, 64], 10 seeds)") == 1
    assert "Pendulum-v1 (100k steps, [64, 64], 5 seeds)" in header
    assert "Walker2d" not in header
    rows = [line for line in text.splitlines() if line.startswith("| (")]
    assert len(rows) == len(TABLE)
    assert rows[5].startswith("| (6) clipped double q | **differs: -6.0 [-9.0, 3.0]** | unresolved: -6.0")
    assert "equivalent" not in "".join(rows)


def test_factorial_effects_that_differ_are_listed_with_the_rest_counted(tmp_path):
    effects = {
        "target_networks": comparison("differs", -188.8, (-260.4, -117.2), p_adjusted=0.019),
        "clipped_double_q": comparison("equivalent", 1.0, (-2.0, 4.0)),
        "target_networks x clipped_double_q": comparison("differs", 79.0, (52.6, 105.5), p_adjusted=0.01),
        "x": comparison("unresolved", 5.0, (-50.0, 60.0)),
    }
    section = {
        "switches": ["target_networks", "clipped_double_q"],
        "outcomes": {"final_window": {"seeds": [0, 1, 2], "effects": effects}},
    }
    study = write_study(tmp_path / "f", {"Hopper-v5": {}}, sections={"Hopper-v5: factorial analysis": section})
    text = answer_markdown([study])
    assert "2^2 factorial over target networks, clipped double q (f, 100k steps, [64, 64], 3 complete seeds" in text
    assert (
        "  - mean return at the end: differs: removing target networks -188.8 [-260.4, -117.2] (Holm p 0.019); "
        "target networks x clipped double q 79.0 [52.6, 105.5] (Holm p 0.01); equivalent: removing clipped double q; "
        "1 of 4 unresolved." in text
    )


def test_paper_effect_is_placed_against_our_interval(tmp_path):
    paper = PAPER_TABLE2["Hopper"]["no_clipped_double_q"] - PAPER_TABLE2["Hopper"]["td3"]
    assert paper_comparison("no_clipped_double_q", paper, comparison("unresolved", -144.3, (-540.3, 251.6))) == (
        "clipped double q: paper -1,467.4 (outside our CI), here unresolved -144.3 [-540.3, 251.6]"
    )
    inside = paper_comparison("no_clipped_double_q", paper, comparison("differs", -1500.0, (-2000.0, -1000.0)))
    assert "(inside our CI)" in inside
    study = write_study(tmp_path / "s", {"Hopper-v5": leave_one_out(), "Pendulum-v1": leave_one_out()})
    budget = answer_markdown([study]).split("**What the budgets allow.**")[1]
    assert "The paper's TD3 scores 3,304.8 on Hopper at 1M steps." in budget
    assert budget.count("paper ") == 3  # Hopper's three additions; Pendulum is not in the paper's table


def test_a_study_without_a_report_is_named(tmp_path):
    (tmp_path / "study.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"report\.json: no report; run `sb3-ablation report"):
        StudyReport.read(tmp_path)
