"""A study's evaluations for other tools, on a tiny synthetic study written through the store: the tidy
``evaluations.csv`` every report writes (its columns, one row per env, variant, seed and evaluation, the records'
numbers exactly), and ``report --export zoo DIR``, rl-zoo's layout, which rl_zoo3's ``all_plots`` reads."""

import csv
import math
import pickle
import sys

import numpy as np
import pytest

from sb3_ablation.cli.study import report_main
from sb3_ablation.common.io import write_json_atomic
from sb3_ablation.study.run.overestimation import measure_from_episodes, overestimation_method
from sb3_ablation.study.store.runs import read_run, record_paths, run_path, write_run
from sb3_ablation.switches import DEFAULTS, SWITCHES

ENV = "Pendulum-v1"
VARIANTS = ["td3", "no_clipped_double_q", "ref_sb3_td3"]
SEEDS = [0, 3]  # the manifest also plans seed 7: td3's failed, the others' missing
TIMESTEPS = [0, 100, 200, 300]
TIME_LIMIT = 200
COLUMNS = [
    "env", "variant", "algo", "seed", "evaluation", "timesteps", "n_episodes", "mean_return", "std_return", "q_estimate",
    "discounted_return", "overestimation", "relative_overestimation", "value_states", *SWITCHES,
]  # fmt: skip


def value_episode(q: float, g: float, terminated: bool) -> dict:
    """One episode's summary of the overestimation measure: 150 steps to termination, else 428 (past the limit)."""
    states = 150 if terminated else TIME_LIMIT
    return {"steps": 150 if terminated else 428, "terminated": terminated, "states": states,
            "q_sum": q * states, "return_sum": g * states, "abs_return_sum": abs(g) * states}  # fmt: skip


def record(variant: str, seed: int, status: str = "ok") -> dict:
    """A finished run (ref_sb3_td3: no switches and, like records before the measure, no overestimation)."""
    offset = 10.0 * VARIANTS.index(variant) + seed
    returns = [[-1000.0 + 250.0 * i + offset + e for e in (-0.5, 0.0, 0.75)] for i in range(len(TIMESTEPS))]
    evaluations = {
        "timesteps": TIMESTEPS,
        "mean_return": [float(np.mean(r)) for r in returns],
        "std_return": [float(np.std(r)) for r in returns],
        "episode_returns": returns,
    }
    entries = {}
    if variant != "ref_sb3_td3":
        value_episodes = [
            [value_episode(-40.0 + i + offset, -45.5 + i, terminated=(e == 1)) for e in range(3)]
            for i in range(len(TIMESTEPS))
        ]
        measures = [measure_from_episodes(episodes) for episodes in value_episodes]
        for key in ("overestimation", "relative_overestimation", "value_states"):
            evaluations[key] = [m[key] for m in measures]
        evaluations["overestimation"][0] = None  # a non-finite value, stored as null
        entries = {"value_episodes": value_episodes, "overestimation_method": overestimation_method(0.98, TIME_LIMIT)}
    switches = {} if variant == "ref_sb3_td3" else {**DEFAULTS, "clipped_double_q": variant == "td3"}
    return {
        "format": 3, "env": ENV, "variant": variant, "seed": seed, "status": status,
        "algo": "td3" if variant == "ref_sb3_td3" else "ablatable_td3", "switches": switches,
        "error": None if status == "ok" else "boom", "evaluations": evaluations, **entries,
    }  # fmt: skip


@pytest.fixture
def study(tmp_path):
    """The study folder: 3 variants x 2 finished seeds, 4 evaluations of 3 episodes each, and td3's seed 7 failed."""
    out = tmp_path / "study"
    manifest = {"envs": [ENV], "variants": VARIANTS, "seeds": [*SEEDS, 7], "settings": {},
                "hyperparams": {ENV: {"ablatable_td3": {"n_timesteps": 300, "gamma": 0.98}}}}  # fmt: skip
    write_json_atomic(out / "study.json", manifest)
    for variant in VARIANTS:
        for seed in SEEDS:
            write_run(run_path(out, ENV, variant, seed), record(variant, seed))
    write_run(run_path(out, ENV, "td3", 7), record("td3", 7, status="failed"))
    return out


def finished_records(out):
    """The finished runs' records as the store reads them, by variant (manifest order) and seed."""
    records = [read_run(path) for path in record_paths(out)]
    records = [r for r in records if r["status"] == "ok"]
    return sorted(records, key=lambda r: (VARIANTS.index(r["variant"]), r["seed"]))


def report(out, *args):
    return report_main([str(out), "--reps", "100", *args])


def all_plots(args: list[str], cwd, monkeypatch, capsys) -> str:
    """
    ``python -m rl_zoo3.plots.all_plots ARGS`` in ``cwd``, run in this process (it reads and writes the same files),
    its seaborn style undone and its figures closed after it.

    :return: what it printed
    """
    import matplotlib
    import matplotlib.pyplot as plt
    from rl_zoo3.plots.all_plots import all_plots as rl_zoo_all_plots

    monkeypatch.setattr(sys, "argv", ["all_plots.py", *args])
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    figures = set(plt.get_fignums())
    with matplotlib.rc_context():  # all_plots calls seaborn.set(), which restyles matplotlib for the whole process
        rl_zoo_all_plots()
    for number in set(plt.get_fignums()) - figures:
        plt.close(number)
    return capsys.readouterr().out


def test_every_report_writes_the_tidy_csv_of_the_records(study):
    assert report(study) == 0
    with open(study / "evaluations.csv", newline="") as file:
        reader = csv.DictReader(file)
        assert reader.fieldnames == COLUMNS
        rows = list(reader)
    records = finished_records(study)
    assert len(rows) == len(records) * len(TIMESTEPS) == 24  # the failed run is left out, as in the report
    for r, rec in enumerate(records):
        evaluations = rec["evaluations"]
        for i in range(len(TIMESTEPS)):
            row = rows[r * len(TIMESTEPS) + i]
            assert (row["env"], row["variant"], row["algo"]) == (ENV, rec["variant"], rec["algo"])
            assert (int(row["seed"]), int(row["evaluation"]), int(row["timesteps"])) == (rec["seed"], i, TIMESTEPS[i])
            assert int(row["n_episodes"]) == 3
            assert float(row["mean_return"]) == evaluations["mean_return"][i]
            assert float(row["std_return"]) == evaluations["std_return"][i]
            for switch in SWITCHES:
                assert row[switch] == ("" if rec["variant"] == "ref_sb3_td3" else str(rec["switches"][switch]))
            if rec["variant"] == "ref_sb3_td3":  # no overestimation measure in the record: empty fields
                assert all(row[key] == "" for key in COLUMNS[9:14])
                continue
            episodes = rec["value_episodes"][i]
            states = sum(e["states"] for e in episodes)
            assert float(row["q_estimate"]) == sum(e["q_sum"] for e in episodes) / states
            assert float(row["discounted_return"]) == sum(e["return_sum"] for e in episodes) / states
            for key in ("overestimation", "relative_overestimation"):
                value = evaluations[key][i]
                assert row[key] == "" if value is None else float(row[key]) == value
            assert int(row["value_states"]) == evaluations["value_states"][i] == 550
    assert rows[0]["overestimation"] == "" and rows[1]["overestimation"] != ""
    assert rows[8]["clipped_double_q"] == "False" and rows[0]["clipped_double_q"] == "True"


def test_the_zoo_export_holds_the_records_and_all_plots_reads_it(study, tmp_path, capsys, monkeypatch):
    zoo = tmp_path / "zoo"
    assert report(study, "--export", "zoo", str(zoo)) == 0
    assert f"rl-zoo export: 6 runs in {zoo}" in capsys.readouterr().out
    exported = sorted(str(path.relative_to(zoo)) for path in zoo.rglob("*") if path.is_file())
    assert exported == sorted(f"{v}/{ENV}_{s}/evaluations.npz" for v in VARIANTS for s in SEEDS)
    finals = {}
    for rec in finished_records(study):
        with np.load(zoo / rec["variant"] / f"{ENV}_{rec['seed']}" / "evaluations.npz") as log:
            assert sorted(log.files) == ["ep_lengths", "results", "timesteps"]
            assert log["timesteps"].tolist() == TIMESTEPS
            assert log["results"].shape == (4, 3) and log["results"].tolist() == rec["evaluations"]["episode_returns"]
            if rec["variant"] == "ref_sb3_td3":  # the record holds no episode lengths
                assert np.isnan(log["ep_lengths"]).all() and log["ep_lengths"].shape == (4, 3)
            else:  # the steps each episode ran, cut at the time limit of its score
                assert log["ep_lengths"].tolist() == [[TIME_LIMIT, 150, TIME_LIMIT]] * 4
        finals.setdefault(rec["variant"], []).append(rec["evaluations"]["mean_return"][-1])

    algos = ["td3", "no_clipped_double_q", "ref_sb3_td3"]
    stdout = all_plots(
        ["-f", str(zoo), "-a", *algos, "-e", ENV, "-l", "study", "--no-display", "-o", str(tmp_path / "plots"), "-print"],
        tmp_path, monkeypatch, capsys,
    )  # fmt: skip
    with open(tmp_path / "plots.pkl", "rb") as file:
        plotted = pickle.load(file)[ENV]
    for variant in algos:
        curve = plotted[f"{variant.upper()}-study"]
        assert f"{ENV}-{variant.upper()}-study: 2" in stdout  # it found both runs
        # each run's final mean return and its curve, as recorded (all_plots lists the runs in no particular order)
        assert sorted(curve["last_evals"].tolist()) == sorted(finals[variant])
        assert curve["timesteps"].tolist() == TIMESTEPS
        records = [r for r in finished_records(study) if r["variant"] == variant]
        assert sorted(curve["mean_per_eval"].T.tolist()) == sorted(r["evaluations"]["mean_return"] for r in records)
        std_error = np.std(finals[variant]) / math.sqrt(2)
        assert f"{np.mean(finals[variant]):.0f} +/- {std_error:.0f}" in stdout  # its table, not 0.0
    assert "0.0 +/- 0.0" not in stdout


@pytest.mark.parametrize(
    ("export", "message"),
    [(["zoo", "{tmp}/a_file/zoo"], "is not a folder"), (["csv", "{tmp}/zoo"], "format 'csv' is not one of: zoo")],
)
def test_a_bad_export_is_one_line_and_writes_nothing(study, tmp_path, capsys, export, message):
    (tmp_path / "a_file").write_text("not a folder")
    before = sorted(study.rglob("*"))
    assert report(study, "--export", *(part.format(tmp=tmp_path) for part in export)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sb3-ablation report: --export ") and message in err
    assert sorted(study.rglob("*")) == before and not (tmp_path / "zoo").exists()
