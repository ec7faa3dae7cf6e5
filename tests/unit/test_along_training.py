"""Effects along training (analyse/along_training.py, render/along_training.py): the sign-flip bands over evaluation
steps, the steps where the simultaneous band excludes 0, the sentence, and which comparisons a factorial gets."""

import importlib.util
import itertools
import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from sb3_ablation.study.analyse.along_training import (
    AHEAD,
    BEHIND,
    AlongTraining,
    Bands,
    env_along_training,
    sign_flip_bands,
)
from sb3_ablation.study.analyse.results import RunCurves, StudyData
from sb3_ablation.study.plan.variants import resolve_variants
from sb3_ablation.study.render.along_training import (
    along_training_json,
    along_training_sections,
    sentence,
    where_phrase,
)

ENV = "Pendulum-v1"
STEPS = np.arange(0, 200_001, 5_000)
START = 100_000  # where the synthetic effect starts


def _learning_curve(rng: np.random.Generator) -> np.ndarray:
    """A seed's return over training: a rise to a plateau, autocorrelated wobbles and evaluation noise."""
    rise = -1200.0 + 1000.0 * (1 - np.exp(-STEPS / 40_000))
    wobble = np.cumsum(rng.normal(0.0, 20.0, len(STEPS)))
    return rise + wobble + rng.normal(0.0, 30.0, len(STEPS))


def _study(shifts: dict[str, np.ndarray], seeds: int = 10, seed: int = 0) -> StudyData:
    """TD3 and one variant per entry of ``shifts``: each variant's curve is an independent learning curve of the same
    distribution plus its shift at each step (zero: no effect)."""
    rng = np.random.default_rng(seed)
    runs: dict[str, list[RunCurves]] = {}
    for variant, shift in {"td3": np.zeros(len(STEPS)), **shifts}.items():
        runs[variant] = [
            RunCurves(seed=s, timesteps=STEPS, values={"mean_return": _learning_curve(rng) + shift}) for s in range(seeds)
        ]
    return StudyData(Path("synthetic"), {}, [ENV], list(runs), {ENV: runs})


def _delayed_effect(size: float) -> np.ndarray:
    return np.where(STEPS >= START, size, 0.0)


def test_an_effect_that_starts_at_a_known_step_is_found_from_there_and_not_before():
    data = _study({"no_delayed_policy_update": _delayed_effect(800.0), "no_clipped_double_q": _delayed_effect(-800.0)})
    found = env_along_training(data, ENV, "td3", "wilcoxon", seed=0)
    ahead, behind = found.comparisons["no_delayed_policy_update"], found.comparisons["no_clipped_double_q"]
    for comparison, direction, sign in ((ahead, AHEAD, 1), (behind, BEHIND, -1)):
        excluded = comparison.bands.excluded()
        assert np.array_equal(excluded, np.where(STEPS >= START, sign, 0)), comparison.variant
        assert [(s.direction, s.first, s.last) for s in comparison.spans()] == [(direction, START, int(STEPS[-1]))]
    assert where_phrase(ahead) == "ahead from 100,000 to 200,000 steps"
    assert where_phrase(behind) == "behind from 100,000 to 200,000 steps"
    assert sentence(ahead).startswith("no_delayed_policy_update - td3, evaluation return (10 seeds): ahead from 100,000")
    assert "descriptive" in sentence(ahead) and "differs" not in sentence(ahead) and "equivalent" not in sentence(ahead)
    # the plan's estimate at each step is its test's (Hodges-Lehmann for Wilcoxon), beside the mean
    assert ahead.estimate_name == "Hodges-Lehmann estimate"
    assert not np.array_equal(ahead.estimate, ahead.bands.mean)


def test_without_an_effect_the_sentence_says_not_detected():
    data = _study({"no_target_policy_smoothing": np.zeros(len(STEPS))}, seed=3)
    comparison = env_along_training(data, ENV, "td3", "wilcoxon", seed=0).comparisons["no_target_policy_smoothing"]
    assert not comparison.bands.excluded().any()
    assert where_phrase(comparison) == "not detected at any step (simultaneous 95% band)"
    assert f"mean difference at {STEPS[-1]:,} steps" in sentence(comparison)


def test_five_seeds_cannot_exclude_0_and_say_so():
    data = _study({"no_delayed_policy_update": _delayed_effect(5_000.0)}, seeds=5)
    comparison = env_along_training(data, ENV, "td3", "t", seed=0).comparisons["no_delayed_policy_update"]
    assert not comparison.attainable and not comparison.bands.excluded().any()
    assert where_phrase(comparison).startswith("cannot be detected at any step with 5 seeds")


def _brute_force_p(d: np.ndarray) -> float:
    """The max-t sign-flip p-value of "no difference at any step" over every sign pattern, one pattern at a time."""
    n = d.shape[0]

    def max_t(x: np.ndarray) -> float:
        return float(np.max(np.abs(x.mean(axis=0)) / (x.std(axis=0, ddof=1) / math.sqrt(n))))

    observed = max_t(d)
    patterns = [np.array(signs)[:, None] * d for signs in itertools.product((1.0, -1.0), repeat=n)]
    return sum(max_t(x) >= observed * (1 - 1e-9) for x in patterns) / 2**n


def test_the_band_is_the_max_t_sign_flip_test_over_every_pattern():
    rng = np.random.default_rng(1)
    d = rng.normal(0.4, 1.0, (8, 12)).cumsum(axis=1)
    bands = sign_flip_bands(d)
    assert bands.exact and bands.patterns == 2**8
    assert bands.p_any == _brute_force_p(d)
    t = np.abs(bands.mean) / bands.se
    assert np.array_equal(bands.excluded() != 0, t > bands.critical)
    # the pointwise interval lies within the simultaneous band at every step
    assert np.all(bands.simultaneous[0] <= bands.pointwise[0]) and np.all(bands.pointwise[1] <= bands.simultaneous[1])
    # excluding 0 somewhere is rejecting "no difference at any step" at 0.05
    assert bands.excluded().any() == (bands.p_any <= 0.05)


def test_under_the_null_the_simultaneous_band_misses_0_somewhere_at_most_at_alpha():
    """Symmetric, autocorrelated difference curves (two exchangeable arms): the max-t test is exact, so the rate of
    bands that exclude 0 somewhere stays at or below 5% up to Monte Carlo error (400 replications: SE 0.011)."""
    rng = np.random.default_rng(2)
    misses = [
        sign_flip_bands(rng.standard_t(3, (10, 25)).cumsum(axis=1) * rng.choice((1.0, -1.0), (10, 1))).excluded().any()
        for _ in range(400)
    ]
    assert np.mean(misses) <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 400)


@pytest.mark.parametrize(
    ("d", "message"),
    [(np.zeros((1, 4)), "2 or more seeds"), (np.zeros(4), "seeds x steps"), (np.full((3, 2), np.nan), "non-finite")],
)
def test_bad_differences_are_refused_in_one_line(d, message):
    with pytest.raises(ValueError, match=message) as error:
        sign_flip_bands(d)
    assert "\n" not in str(error.value)


def _design_study(preset: str) -> StudyData:
    rng = np.random.default_rng(0)
    names = [v.name for v in resolve_variants([preset])]
    runs = {
        name: [RunCurves(seed=s, timesteps=STEPS, values={"mean_return": _learning_curve(rng)}) for s in range(4)]
        for name in names
    }
    return StudyData(Path("synthetic"), {}, [ENV], names, {ENV: runs})


def test_a_factorial_compares_the_cells_one_switch_from_the_baseline_and_a_fraction_none():
    full = env_along_training(_design_study("factorial:target_networks,delayed_policy_update"), ENV, "td3", "t", 0)
    assert full.factorial and set(full.comparisons) == {"no_target_networks", "no_delayed_policy_update"}
    assert full.left_out == ("no_target_networks+no_delayed_policy_update",)
    fraction = env_along_training(_design_study("fraction"), ENV, "td3", "t", 0)
    assert fraction.factorial and not fraction.comparisons and len(fraction.left_out) == 31
    model = types.SimpleNamespace(along_training=[fraction])
    (section,) = along_training_sections(model)
    assert any("none of its 31 cells besides the baseline removes one switch" in line for line in section.lines)
    assert not section.figures
    assert along_training_json(model, ENV)["comparisons"] == {}


def test_the_section_draws_one_figure_per_task_and_report_json_has_each_comparison(tmp_path):
    data = _study({"no_delayed_policy_update": _delayed_effect(800.0), "no_clipped_double_q": np.zeros(len(STEPS))})
    model = types.SimpleNamespace(along_training=[env_along_training(data, ENV, "td3", "wilcoxon", seed=0)])
    (section,) = along_training_sections(model)
    assert list(section.figures) == ["Pendulum-v1_along_training.png"]
    section.figures["Pendulum-v1_along_training.png"](tmp_path / "figure.png")
    assert (tmp_path / "figure.png").read_bytes().startswith(b"\x89PNG")
    entry = along_training_json(model, ENV)["comparisons"]["no_delayed_policy_update"]
    assert entry["steps"] == STEPS.tolist()
    assert entry["excluded_steps"] == {"above": STEPS[STEPS >= START].tolist(), "below": []}
    assert entry["where"] == "ahead from 100,000 to 200,000 steps"
    assert entry["spans"] == [{"direction": "ahead", "from": START, "to": int(STEPS[-1])}]
    assert len(entry["simultaneous"]["low"]) == len(entry["pointwise"]["high"]) == len(STEPS)
    assert any(line == f"- {entry['sentence']}" for line in section.lines)
    assert along_training_json(model, "Hopper-v5") is None


# ----------------------------------------------------------------------------------------------------------------------
# The calibration benchmark (benchmarks/along_training_calibration.py) and its section of docs/calibration.md
# ----------------------------------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def calibration(monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "along_training_calibration", ROOT / "benchmarks" / "along_training_calibration.py"
    )
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_calibration_md_keeps_the_along_training_section_when_regenerated(calibration):
    block = f"{calibration.START}\n## Effects along training\n\nrows\n{calibration.END}\n"
    old = f"# Calibration\n\nold tables\n\n{block}"
    assert calibration.kept_section(old, "# Calibration\n\nnew tables\n") == f"# Calibration\n\nnew tables\n\n{block}"
    assert calibration.kept_section(None, "# Calibration\n") == "# Calibration\n"
    assert calibration.with_section(old, f"{calibration.START}\nnew\n{calibration.END}\n").endswith(
        f"old tables\n\n{calibration.START}\nnew\n{calibration.END}\n"
    )


def test_the_calibration_smoke_run_writes_its_section(calibration, tmp_path):
    (tmp_path / "calibration.md").write_text("# Calibration\n\ntables\n")
    report = calibration.run(5, 0, tmp_path)
    page = (tmp_path / "calibration.md").read_text()
    assert page.startswith("# Calibration\n\ntables\n") and page.endswith(calibration.section(report))
    assert set(report["results"]) == {s.name for s in calibration.scenarios()}
    rates = ("misses_0", "names_a_null_step", "detects", "covers")
    assert all(0.0 <= row[rate] <= 1.0 for row in report["results"].values() for rate in rates)
    # the last scenario has an effect from midway: fewer steps where the truth is 0 than steps
    assert [row["null_steps"] < row["steps"] for row in report["results"].values()] == [False] * 7 + [True]
    # the report's own tests at one step, on the same curves
    ends = [f"{test}_{end}" for test in calibration.ONE_STEP_TESTS for end in ("first", "last")]
    assert all(0.0 <= row[key] <= 1.0 for row in report["results"].values() for key in ends)
    assert "| scenario | wilcoxon, first step | wilcoxon, last step | signflip, first step |" in page


def test_the_committed_calibration_keeps_the_band_at_alpha_on_the_studies_curves(calibration):
    report = json.loads((ROOT / "docs" / "along-training-calibration.json").read_text())
    assert (ROOT / "docs" / "calibration.md").read_text().count(calibration.section(report)) == 1
    assert report["reps"] >= 1_900 and set(report["results"]) == {s.name for s in calibration.scenarios()}
    limit = report["alpha"] + 2 * math.sqrt(report["alpha"] * (1 - report["alpha"]) / report["reps"])
    real = {name: row for name, row in report["results"].items() if not name.startswith("simulated")}
    assert len(real) == 6 and all(row["names_a_null_step"] <= limit for row in real.values())
    # where the band is liberal (skewed differences), one test of the mean at the most skewed step is no better: the
    # section says so only where the numbers do
    skewed = report["results"][calibration.SKEWED]
    se = math.sqrt(skewed["signflip_first"] * (1 - skewed["signflip_first"]) / report["reps"])
    if skewed["names_a_null_step"] > limit:
        assert skewed["names_a_null_step"] <= skewed["signflip_first"] + 2 * se
        assert "no more than one test of the mean at the most skewed step" in calibration.section(report)


def _with_sides(sides: list[int]) -> AlongTraining:
    """A comparison whose simultaneous band lies above 0 (+1), below (-1) or around it (0) at steps 0, 5,000, ..."""
    side = np.array(sides, dtype=np.float64)
    steps = np.arange(len(sides)) * 5_000
    band = np.array([side * 2 - 1, side * 2 + 1])  # [1, 3] above 0, [-3, -1] below, [-1, 1] around it
    bands = Bands(side * 2, np.ones(len(sides)), band, band, 3.0, 0.001, 2**10, True)
    return AlongTraining("no_delayed_policy_update", "td3", tuple(range(10)), steps, side * 2, "mean", bands)


def test_the_phrase_names_each_direction_in_training_order_with_its_spans():
    several = _with_sides([0, -1, 0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
    assert where_phrase(several) == (
        "behind at 5,000 steps; ahead at 25,000, 40,000-50,000 and 100,000 steps (5 of 21 evaluations)"
    )
    many = _with_sides([1, 0, 1, 0, 1, 0, 1, 1, 0])
    assert where_phrase(many) == "ahead in 4 separate spans between 0 and 35,000 steps (5 of 9 evaluations)"
    assert where_phrase(_with_sides([0, 0, 1])) == "ahead at 10,000 steps"
