"""``train -optimize`` cannot mix studies: a stored study keeps its fixed settings, and export gives back what ran."""

import argparse
import logging

import optuna
import pytest

from sb3_ablation import __version__
from sb3_ablation.zoo import train
from sb3_ablation.zoo.experiment import STUDY_SETTINGS_ATTR
from sb3_ablation.zoo.registry import register
from sb3_ablation.zoo.trials import MultiSeedExperimentManager

ENV = "Pendulum-v1"
NAME = f"ablatable_td3_{ENV}"
# Tiny trials: 200 steps from step 100, one evaluation of one episode, two seeds (3 and 4) per trial
TUNE = ["--algo", "ablatable_td3", "--env", ENV, "-optimize", "--n-evaluations", "1", "--eval-episodes", "1"]
TUNE += ["--sampler", "random", "--pruner", "none", "--seed", "3", "--no-optim-plots", "--trial-seeds", "2"]


def tune(tmp_path, *extra, n_timesteps="200", learning_starts="100"):
    argv = [*TUNE, "-f", str(tmp_path / "logs"), "-n", n_timesteps, "--hyperparams", f"learning_starts:{learning_starts}"]
    return train.main([*argv, "--n-trials", "1", *extra])


def files(folder):
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """A study of two trials, its best trial exported (tuned.yml): made by a first invocation in a fresh folder, then
    extended by a second with the same settings. What Optuna said in each is kept (``said``: one list per call)."""
    folder = tmp_path_factory.mktemp("tuned")
    said: list[list[str]] = [[], []]
    handler = logging.Handler()
    optuna_logger = logging.getLogger("optuna")  # (Optuna's own handler writes to the stderr of its import)
    optuna_logger.addHandler(handler)
    try:
        for messages in said:
            handler.emit = messages.append  # type: ignore[method-assign]
            assert tune(folder, "--export-best", str(folder / "tuned.yml")) == 0  # the second: the same study, extended
    finally:
        optuna_logger.removeHandler(handler)
    storage = f"sqlite:///{folder / 'logs' / 'ablatable_td3' / 'optuna.db'}"
    return folder, storage, [[record.getMessage() for record in messages] for messages in said]


def test_the_study_records_its_fixed_settings(tuned):
    _, storage, _ = tuned
    study = optuna.load_study(study_name=NAME, storage=storage)
    assert len(study.trials) == 2
    settings = study.user_attrs[STUDY_SETTINGS_ATTR]
    assert (settings["algo"], settings["env"], settings["version"]) == ("ablatable_td3", ENV, __version__)
    assert (settings["trial_seeds"], settings["trial_aggregate"]) == ([3, 4], "mean")
    assert settings["fixed_hyperparams"]["n_timesteps"] == 200  # the budget the trials ran, not the entry's 20000
    assert settings["fixed_hyperparams"]["learning_starts"] == 100


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"n_timesteps": "300"}, "n_timesteps 200, here 300"),
        ({"learning_starts": "150"}, "learning_starts 100, here 150"),
        ({"extra": ("--trial-seeds", "3")}, "trial_seeds [3, 4], here [3, 4, 5]"),  # (the last --trial-seeds counts)
        ({"extra": ("--seed", "7")}, "its seeds: --seed 3 --trial-seeds 2"),
    ],
)
def test_a_rerun_with_other_fixed_settings_is_refused_and_leaves_nothing(tuned, capsys, change, named):
    folder, storage, _ = tuned
    before = files(folder)
    capsys.readouterr()
    change = dict(change)
    assert tune(folder, *change.pop("extra", ()), **change) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith(f"sb3-ablation train: error: study '{NAME}' in {storage} was tuned with other fixed settings (")
    assert named in line and f"pass a new --study-name (e.g. {NAME}_2)" in line
    assert captured.out == ""  # no preamble before the refusal
    assert files(folder) == before  # no run folder left behind
    assert len(optuna.load_study(study_name=NAME, storage=storage).trials) == 2


def test_the_exported_entry_reruns_the_best_trial_to_its_value(tuned):
    folder, storage, _ = tuned
    best = optuna.load_study(study_name=NAME, storage=storage).best_trial
    register()
    # the best trial again, from the exported file alone: its parameters on the file's entry, the same seeds
    manager = MultiSeedExperimentManager(
        argparse.Namespace(),
        "ablatable_td3",
        ENV,
        str(folder / "rerun"),
        n_eval_episodes=1,
        optimize_hyperparameters=True,
        n_evaluations=1,
        seed=3,
        config=str(folder / "tuned.yml"),
        verbose=0,
    )
    manager.write_files = False
    manager.trial_seeds = 2
    assert manager.setup_experiment() is None  # (-optimize: set up for trials)
    assert manager.n_timesteps == 200  # the exported budget is the one the trials ran
    assert manager.objective(optuna.trial.FixedTrial(best.params)) == best.value


def test_using_an_existing_study_is_said_only_of_one_that_existed(tuned):
    _, _, (fresh, extended) = tuned
    assert any("Trial 0 finished" in message for message in fresh)  # its other lines are said
    assert not any("Using an existing study" in message for message in fresh)
    assert any("Using an existing study" in message for message in extended)
