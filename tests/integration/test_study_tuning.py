"""A study with per-variant tuning: every variant tuned for itself on the tuning seeds, its best hyperparameters in its
confirmatory runs, resumable from the Optuna storages, and both answers side by side in the report."""

import contextlib
import dataclasses
import json
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
import torch as th
import yaml

from sb3_ablation.study.analyse.inference import compare_family
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.analyse.two_part import RARE_FAILURES_TEXT
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.render.format import fmt, fmt_ci
from sb3_ablation.study.run import backends, runner
from sb3_ablation.study.run.tuning import (
    OPTUNA_STUDY,
    storage_path,
    tuned_folder,
)
from sb3_ablation.study.store.manifest import read_manifest
from sb3_ablation.study.store.runs import read_run, run_path
from sb3_ablation.zoo.export import optuna_storage
from sb3_ablation.zoo.hyperparams_opt import convert_declared_params

ENV = "Pendulum-v1"
VARIANTS = ["td3", "no_target_networks"]
MARGIN = 50.0
TUNING = {
    "n_trials": 2,
    "seeds": [1000, 1001],
    "aggregate": "mean",
    "sampler": "tpe",
    "pruner": "median",
    "n_evaluations": 2,
    "eval_episodes": 1,
    "search_space": {
        "learning_rate": {"low": 1.0e-4, "high": 3.0e-3, "log": True},
        "tau": {"low": 0.001, "high": 0.05, "log": True},
        "batch_size": {"choices": [16, 32]},
        "noise_std": {"low": 0.05, "high": 0.5},
    },
}
# Pendulum-v1, 200 steps, [16, 16] networks, learning from step 100
SETTINGS = {
    "env": [ENV],
    "variants": VARIANTS,
    "n_timesteps": 200,
    "eval_freq": 100,
    "eval_episodes": 1,
    "eval_max_episode_steps": 50,
    "hyperparams": {"learning_starts": 100, "policy_kwargs": "dict(net_arch=[16, 16])", "batch_size": 32},
    "workers": 2,
    "analysis": {"margins": {ENV: MARGIN}},
    "tuning": TUNING,
}


def best_trial(out, variant: str) -> optuna.trial.FrozenTrial:
    storage = optuna_storage(str(storage_path(out, ENV, variant)), create=False)
    return optuna.load_study(study_name=OPTUNA_STUDY, storage=storage).best_trial


@contextlib.contextmanager
def worker_pool_in_this_process() -> Iterator[None]:
    """
    The local backend's worker pool as one thread of this process, which starts no worker process that imports torch
    and the zoo anew (most of a small study's time); the torch threads a run sets are this process's, restored after.
    """
    threads = th.get_num_threads()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(backends, "worker_pool", lambda workers: ThreadPoolExecutor(max_workers=1))
            yield
    finally:
        th.set_num_threads(threads)


def runs_in_this_process(patch: pytest.MonkeyPatch) -> None:
    """The study's confirmatory runs (not its tunings) in this process, one after another
    (:func:`worker_pool_in_this_process`). Runs in worker processes side by side are the other study tests'."""
    local = backends.BY_NAME["local"]

    def run(*args: Any) -> None:
        with worker_pool_in_this_process():
            local.run(*args)

    patch.setattr(runner, "BACKENDS", {**runner.BACKENDS, "local": dataclasses.replace(local, run=run)})


@pytest.fixture(scope="module")
def tuned_study(tmp_path_factory) -> Path:
    """A tuned study of 5 confirmatory seeds (enough for a test) run by the command line, with its report (of 200
    bootstrap resamples rather than the default 10000: the numbers checked here are the tests', not resampled). Its
    tunings run in 2 worker processes side by side, its confirmatory runs in this process (:func:`runs_in_this_process`)."""
    from sb3_ablation.cli.study import study_main

    folder = tmp_path_factory.mktemp("tuned_study")
    path = folder / "study.yml"
    path.write_text(yaml.safe_dump({**SETTINGS, "seed_list": [0, 1, 2, 3, 4], "out": str(folder / "out")}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sb3_ablation.study.render.report.DEFAULT_REPS", 200)
        runs_in_this_process(patch)
        assert study_main(["--config", str(path), "--no-progress", "--verbose", "0", "--report"]) == 0
    return folder / "out"


def test_a_variants_tuned_hyperparameters_reach_its_runs(tuned_study):
    manifest = read_manifest(tuned_study)
    assert manifest["settings"]["tuning"]["search_space"]["tau"] == {"low": 0.001, "high": 0.05, "log": True}
    assert manifest["settings"]["tuning"]["seeds"] == [1000, 1001]
    tuned_manifest = read_manifest(tuned_folder(tuned_study))
    for variant in VARIANTS:
        best = best_trial(tuned_study, variant)
        chosen = convert_declared_params(best.params)
        assert chosen["noise_type"] == "normal" and chosen["noise_std"] == best.params["noise_std"]
        assert manifest["tuned"][ENV][variant]["params"] == best.params
        assert manifest["tuned"][ENV][variant]["hyperparams"] == chosen
        assert manifest["tuned"][ENV][variant]["value"] == best.value
        # pinned in the nested study, per variant, and in each of its runs' records
        assert tuned_manifest["settings"]["variant_hyperparams"][variant][ENV] == chosen
        for seed in range(5):
            record = read_run(run_path(tuned_folder(tuned_study), ENV, variant, seed))
            assert record is not None and record["status"] == "ok"
            assert {key: record["hyperparams"][key] for key in chosen} == chosen
            # the run with the study's hyperparameters keeps them
            default = read_run(run_path(tuned_study, ENV, variant, seed))
            assert default["hyperparams"]["learning_rate"] == 1e-3 and default["hyperparams"]["batch_size"] == 32
    # without target networks tau is not used: not tuned, the study's value stays
    assert "tau" not in best_trial(tuned_study, "no_target_networks").params
    assert "tau" in best_trial(tuned_study, "td3").params


def _json(value: float) -> float | None:
    """As report.json writes a number: null where it is not finite."""
    return value if math.isfinite(value) else None


def _final_window(record: dict, plan: AnalysisPlan) -> float:
    timesteps = np.asarray(record["evaluations"]["timesteps"])
    returns = np.asarray(record["evaluations"]["mean_return"], dtype=np.float64)
    return float(np.mean(returns[timesteps >= (1 - plan.final_fraction) * timesteps[-1]]))


def _recomputed(out, plan: AnalysisPlan) -> dict:
    """variant - td3 per seed from the records, through the plan's test and margin."""
    values = {
        variant: {seed: _final_window(read_run(run_path(out, ENV, variant, seed)), plan) for seed in range(5)}
        for variant in VARIANTS
    }
    differences = {"no_target_networks": np.array([values["no_target_networks"][s] - values["td3"][s] for s in range(5)])}
    family = compare_family(
        differences, plan.alpha, MARGIN, plan.power, MIN_RUNS, plan.test, 0, plan.equivalence_test, claims=plan.claim_rule
    )
    return family["no_target_networks"]


def test_the_report_sections_numbers_are_the_two_comparisons_recomputed_from_the_records(tuned_study):
    # the plan the study declared (a new plan: the partitioned claims rule)
    plan = AnalysisPlan.from_dict(json.loads((tuned_study / "study.json").read_text())["analysis"])
    assert plan.margins == {ENV: MARGIN} and plan.claims == "partitioned"
    report = json.loads((tuned_study / "report.json").read_text())
    section = report["sections"]["Removed with TD3's hyperparameters, and with its own"]
    (row,) = section["envs"][ENV]["comparisons"]
    assert row["variant"] == "no_target_networks"
    default, own = _recomputed(tuned_study, plan), _recomputed(tuned_folder(tuned_study), plan)
    for shown, recomputed in ((row["default"], default), (row["own"], own)):
        assert shown["n"] == recomputed.n == 5
        assert shown["effect"] == recomputed.effect
        assert shown["ci"] == [_json(bound) for bound in recomputed.ci]
        assert shown["p_adjusted"] == _json(recomputed.p_adjusted)
        assert shown["p_equivalence_adjusted"] == _json(recomputed.p_equivalence_adjusted)
        # the test's own result; the verdict shown is it, or the partitioned rule's rare-failure line in an equivalent's place
        assert shown["test_verdict"] == recomputed.verdict
        assert shown["verdict"] == recomputed.verdict or (
            recomputed.verdict == "equivalent" and RARE_FAILURES_TEXT in shown["verdict"]
        )
    if default.verdict == "differs" and default.effect != 0:
        assert row["recovered"] == 1 - own.effect / default.effect
    else:
        assert row["recovered"] is None and row["recovered_note"].startswith("undefined")
    # the answer with TD3's hyperparameters is the study's own comparison
    assert report["envs"][ENV]["outcomes"]["final_window"]["variants"]["no_target_networks"]["effect"] == default.effect
    markdown = (tuned_study / "report.md").read_text()
    assert "## Removed with TD3's hyperparameters, and with its own" in markdown
    assert f"| no_target_networks | {fmt(default.effect)} {fmt_ci(default.ci)} (n = 5) |" in markdown
    assert f"| {fmt(own.effect)} {fmt_ci(own.ci)} (n = 5) |" in markdown


def test_the_recovered_share_has_a_bootstrap_interval_over_seeds():
    """Resampling seeds: identical arms recover 0 in every resample; an own arm at half the effect on every seed
    recovers 50% in every resample; a noisy own arm gives an interval around its point estimate."""
    from types import SimpleNamespace

    from sb3_ablation.study.analyse.tuning import recovered_interval

    def arm(d):  # the interval reads only the per-seed differences of a comparison
        return SimpleNamespace(differences=tuple(d))

    base = np.array([-100.0, -80.0, -120.0, -90.0, -110.0, -95.0])
    assert recovered_interval(arm(base), arm(base), "signflip", 0) == (0.0, 0.0)
    low, high = recovered_interval(arm(base), arm(base / 2), "signflip", 0)
    assert low == pytest.approx(0.5) and high == pytest.approx(0.5)
    noisy = base / 2 + np.array([30.0, -30.0, 20.0, -20.0, 10.0, -10.0])
    low, high = recovered_interval(arm(base), arm(noisy), "signflip", 0)
    assert low < 0.5 < high
    assert recovered_interval(arm(base[:1]), arm(base[:1]), "signflip", 0) is None
