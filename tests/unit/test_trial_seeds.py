"""``train -optimize --trial-seeds K --trial-aggregate {mean,iqm}``: multi-seed Optuna trials (sb3_ablation.zoo.trials).

Tiny trials: Pendulum-v1, 200 steps, 50 of them before learning starts, a 64x64 network (rl_zoo3's "small"), the
trial's parameters enqueued so that each trial is fast and known.
"""

import argparse
import math

import numpy as np
import optuna
import pytest
import yaml
from scipy import stats

from sb3_ablation.zoo import export, train
from sb3_ablation.zoo.hyperparams import default_config_file
from sb3_ablation.zoo.registry import register
from sb3_ablation.zoo.trials import AGGREGATES, MultiSeedExperimentManager, SeedAggregate, SeedReports

ENV = "Pendulum-v1"
N_STEPS = 200
SEED = 5
#: a fast trial: small network and batch, one gradient step per step
PARAMS = {
    "one_minus_gamma": 0.02,
    "batch_size_pow": 5,
    "learning_rate": 1e-3,
    "train_freq": 1,
    "tau": 0.01,
    "noise_type": "normal",
    "noise_std": 0.1,
    "net_arch": "small",
    "buffer_size": 10_000,
}
TD3_PARAMS = {"policy_delay": 2, "target_policy_noise": 0.2, "target_noise_clip": 0.5}


def _params(algo, **changes):
    return {**PARAMS, **(TD3_PARAMS if algo == "ablatable_td3" else {}), **changes}


def _optimize(tmp_path, algo, *extra, storage=None, study="tune"):
    storage = storage or f"sqlite:///{tmp_path / 'tune.db'}"
    argv = ["--algo", algo, "--env", ENV, "-f", str(tmp_path / "logs"), "-optimize", "-n", str(N_STEPS)]
    argv += ["--eval-episodes", "1", "--sampler", "random", "--seed", str(SEED), "--no-optim-plots"]
    argv += ["--storage", storage, "--study-name", study, "--hyperparams", "learning_starts:50"]
    return train.main([*argv, *extra])


def _enqueue(storage, study_name, *params):
    study = optuna.create_study(storage=export.optuna_storage(storage), study_name=study_name, direction="maximize",
                                load_if_exists=True)  # fmt: skip
    for trial_params in params:
        study.enqueue_trial(trial_params)


def _trials(storage, study_name="tune"):
    return optuna.load_study(study_name=study_name, storage=export.optuna_storage(storage, create=False)).trials


def _evaluations(folder):
    """Each evaluation's mean reward, from the evaluations.npz that the seed's EvalCallback wrote."""
    with np.load(folder / "evaluations.npz") as data:
        return [float(np.mean(rewards)) for rewards in data["results"]]


def _iqm(values):
    return float(stats.trim_mean(np.asarray(values, dtype=np.float64), 0.25))


@pytest.mark.parametrize(("algo", "engine"), [("ablatable_td3", "batched"), ("ddpg_scratch", "in turn")])
def test_a_two_seed_trial_keeps_each_seeds_value_and_reports_their_mean(tmp_path, capsys, algo, engine):
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    # (train_freq 7: rollouts end past the evaluations, which still come every 100 steps)
    _enqueue(storage, "tune", _params(algo), _params(algo, learning_rate=3e-4, train_freq=7))
    logs = tmp_path / "opt"
    extra = ["--n-trials", "2", "--trial-seeds", "2", "--n-evaluations", "2", "--pruner", "none"]
    assert _optimize(tmp_path, algo, *extra, "--optimization-log-path", str(logs)) == 0
    trials = _trials(storage)
    assert [trial.state for trial in trials] == [optuna.trial.TrialState.COMPLETE] * 2
    for trial in trials:
        assert trial.user_attrs["trial_seeds"] == [SEED, SEED + 1]
        assert trial.user_attrs["trial_aggregate"] == "mean" and trial.user_attrs["trial_engine"] == engine
        values = trial.user_attrs["seed_values"]
        assert len(values) == 2 and values[0] != values[1]  # two seeds, two runs
        assert trial.value == (values[0] + values[1]) / 2
        # each seed evaluated at the same steps as a one-seed trial (every 100 steps); the trial got their mean each time
        per_seed = [_evaluations(logs / f"trial_{trial.number}" / f"seed_{seed}") for seed in (SEED, SEED + 1)]
        assert [len(evaluations) for evaluations in per_seed] == [2, 2]
        assert [evaluations[-1] for evaluations in per_seed] == values
        assert trial.intermediate_values == {step + 1: (per_seed[0][step] + per_seed[1][step]) / 2 for step in range(2)}
    assert optuna.load_study(study_name="tune", storage=storage).user_attrs["sb3_ablation:trial_aggregate"] == "mean"
    # the best trial exports as a zoo entry of its parameters only (no seed attributes)
    best = max(trials, key=lambda trial: trial.value)
    entry = yaml.safe_load((tmp_path / "logs" / algo / f"best_{ENV}.yml").read_text())[ENV]
    assert entry["learning_rate"] == best.params["learning_rate"]
    assert not {"seed_values", "trial_seeds", "trial_aggregate", "trial_engine"} & set(entry)
    assert f"mean over seeds [{SEED}, {SEED + 1}]" in (tmp_path / "logs" / algo / f"best_{ENV}.yml").read_text()


def test_iqm_over_four_seeds_is_the_declared_aggregate(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    _enqueue(storage, "tune", _params("ddpg_scratch"))
    extra = ["--n-trials", "1", "--trial-seeds", "4", "--trial-aggregate", "iqm", "--n-evaluations", "1"]
    assert _optimize(tmp_path, "ddpg_scratch", *extra, "--pruner", "none", "-n", "100") == 0
    (trial,) = _trials(storage)
    values = trial.user_attrs["seed_values"]
    assert trial.user_attrs["trial_seeds"] == [SEED, SEED + 1, SEED + 2, SEED + 3]
    assert trial.user_attrs["trial_aggregate"] == "iqm" and len(set(values)) == 4
    middle = sorted(values)[1:3]
    assert trial.value == _iqm(values) == (middle[0] + middle[1]) / 2  # the two middle values of four
    assert trial.value != np.mean(values)
    assert optuna.load_study(study_name="tune", storage=storage).user_attrs["sb3_ablation:trial_aggregate"] == "iqm"


def test_a_seeds_run_does_not_depend_on_the_other_seeds_in_turn(tmp_path, capsys):
    # in turn, each seed has its own random streams: seed SEED's value is the same with 2 or 3 seeds per trial
    found = []
    for n_seeds in (2, 3):
        storage = f"sqlite:///{tmp_path / f'tune{n_seeds}.db'}"
        _enqueue(storage, "tune", _params("ddpg_scratch"))
        extra = ["--n-trials", "1", "--trial-seeds", str(n_seeds), "--n-evaluations", "1", "--pruner", "none"]
        assert _optimize(tmp_path, "ddpg_scratch", *extra, "-n", "100", storage=storage) == 0
        found.append(_trials(storage)[0].user_attrs["seed_values"])
    assert found[0] == found[1][:2]


class PruneAtFirstReport(optuna.pruners.BasePruner):
    """Prunes every trial at its first report, and keeps what it saw."""

    def __init__(self):
        self.seen = []

    def prune(self, study, trial):
        self.seen.append(dict(trial.intermediate_values))
        return True


def _manager(tmp_path, algo, n_seeds, aggregate):
    register()
    manager = MultiSeedExperimentManager(
        argparse.Namespace(), algo, ENV, str(tmp_path / "logs"), n_timesteps=N_STEPS, optimize_hyperparameters=True,
        n_evaluations=3, n_eval_episodes=1, hyperparams={"learning_starts": 50}, seed=SEED,
        optimization_log_path=str(tmp_path / "opt"), config=default_config_file(algo), verbose=0,
    )  # fmt: skip
    manager.trial_seeds, manager.trial_aggregate = n_seeds, aggregate
    assert manager.setup_experiment() is None  # -optimize: no model
    return manager


@pytest.mark.parametrize(("algo", "aggregate"), [("ablatable_td3", "mean"), ("ddpg_scratch", "iqm")])
def test_the_pruner_sees_the_aggregate_and_a_pruned_trial_stops(tmp_path, algo, aggregate):
    manager = _manager(tmp_path, algo, 2, aggregate)
    pruner = PruneAtFirstReport()
    study = optuna.create_study(direction="maximize", pruner=pruner)
    study.enqueue_trial(_params(algo))
    study.optimize(manager.objective, n_trials=1)
    (trial,) = study.trials
    assert trial.state == optuna.trial.TrialState.PRUNED
    per_seed = [_evaluations(tmp_path / "opt" / "trial_0" / f"seed_{seed}") for seed in (SEED, SEED + 1)]
    assert [len(evaluations) for evaluations in per_seed] == [1, 1]  # stopped at the first of 3 evaluations
    first = [evaluations[0] for evaluations in per_seed]
    expected = AGGREGATES[aggregate](first)
    assert expected == (first[0] + first[1]) / 2  # (the IQM of two values is their mean)
    assert pruner.seen == [{1: expected}] and trial.intermediate_values == {1: expected}
    assert trial.user_attrs["seed_values"] == first


class FakeTrial:
    def __init__(self, prune_below):
        self.reports, self.prune_below = [], prune_below

    def report(self, value, step):
        self.reports.append((step, value))

    def should_prune(self):
        return self.reports[-1][1] < self.prune_below


def test_the_aggregate_is_reported_once_every_seed_has_evaluated():
    reports = [SeedReports() for _ in range(4)]
    trial = FakeTrial(prune_below=-100.0)
    aggregate = SeedAggregate(trial, reports, "iqm")
    for value, report in zip([-10.0, -50.0, -20.0], reports, strict=False):
        report.report(value, 1)
    assert aggregate.report_complete() and trial.reports == []  # seed 4 has not evaluated yet
    reports[3].report(-1000.0, 1)
    assert aggregate.report_complete() and trial.reports == [(1, (-20.0 + -50.0) / 2)]  # IQM: -1000 and -10 cut
    for value, report in zip([-300.0, -200.0, -250.0, 0.0], reports, strict=True):
        report.report(value, 2)
    assert not aggregate.report_complete() and aggregate.pruned
    assert trial.reports[-1] == (2, (-250.0 + -200.0) / 2) and aggregate.last_values == [-300.0, -200.0, -250.0, 0.0]
    with pytest.raises(RuntimeError):
        reports[0].report(1.0, 5)  # evaluations come in order


def test_one_seed_per_trial_is_rl_zoo3s_objective(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    _enqueue(storage, "tune", _params("ddpg_scratch"))
    extra = ["--n-trials", "1", "--n-evaluations", "1", "--pruner", "none", "-n", "100"]
    assert _optimize(tmp_path, "ddpg_scratch", *extra, "--optimization-log-path", str(tmp_path / "opt")) == 0
    (trial,) = _trials(storage)
    assert set(trial.user_attrs) == {"gamma", "batch_size"}  # rl_zoo3's sampler's, no seeds
    assert (tmp_path / "opt" / "trial_0" / "evaluations.npz").is_file()  # rl_zoo3's folder: no seed folders
    assert trial.value == _evaluations(tmp_path / "opt" / "trial_0")[-1]
    study = optuna.load_study(study_name="tune", storage=storage)
    assert study.user_attrs["sb3_ablation:trial_seeds"] == 1


@pytest.mark.parametrize("suffix", ["db", "log"])
def test_a_second_run_continues_the_study_from_its_storage(tmp_path, capsys, suffix):
    storage = f"sqlite:///{tmp_path / 'tune.db'}" if suffix == "db" else str(tmp_path / "tune.log")
    _enqueue(storage, "tune", _params("ddpg_scratch"), _params("ddpg_scratch", tau=0.02))
    extra = ["--n-trials", "1", "--trial-seeds", "2", "--n-evaluations", "1", "--pruner", "none", "-n", "100"]
    assert _optimize(tmp_path, "ddpg_scratch", *extra, storage=storage) == 0
    first = _trials(storage)[0]
    assert _optimize(tmp_path, "ddpg_scratch", *extra, storage=storage) == 0
    trials = _trials(storage)
    assert [trial.state for trial in trials] == [optuna.trial.TrialState.COMPLETE] * 2
    assert trials[0].value == first.value and trials[0].user_attrs == first.user_attrs  # kept as it was
    assert trials[1].params["tau"] == 0.02 and len(trials[1].user_attrs["seed_values"]) == 2
    # a third run with another aggregate would mix incomparable values: refused in one line
    assert _optimize(tmp_path, "ddpg_scratch", *extra, "--trial-aggregate", "iqm", storage=storage) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "trial_aggregate 'mean', here 'iqm'" in error and "a new --study-name" in error
    assert len(_trials(storage)) == 2


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["-optimize", "--trial-seeds", "0"], "--trial-seeds 0: expected a positive number of seeds"),
        (["-optimize", "--trial-seeds", "-3"], "--trial-seeds -3: expected a positive number of seeds"),
        (["-optimize", "--trial-seeds", "two"], "argument --trial-seeds: invalid int value: 'two'"),
        (["-optimize", "--trial-aggregate", "median"], "argument --trial-aggregate: invalid choice: 'median'"),
        (["--trial-seeds", "3"], "--trial-seeds and --trial-aggregate only apply with -optimize"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(tmp_path, capsys, extra, expected):
    assert train.main(["--algo", "ddpg_scratch", "--env", ENV, "-f", str(tmp_path / "logs"), *extra]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and expected in error
    assert not (tmp_path / "logs").exists()


def test_the_help_names_the_aggregates(capsys):
    assert train.main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--trial-seeds K" in text and "{mean,iqm}" in text and "interquartile mean" in text
    assert math.isclose(AGGREGATES["iqm"]([1.0, 2.0, 3.0, 10.0]), 2.5)
