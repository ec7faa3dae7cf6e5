"""RL Zoo integration: train / enjoy / optimize / export through rl_zoo3, shipped configs, bad input."""

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import optuna
import pytest
import rl_zoo3.hyperparams_opt
import rl_zoo3.utils
import stable_baselines3 as sb3
import yaml
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from sb3_ablation import DDPG, SWITCHES, AblatableTD3
from sb3_ablation.zoo import enjoy, export, train
from sb3_ablation.zoo.hyperparams import (
    ALGOS,
    ZooConfigError,
    check_hyperparams,
    config_dir,
    default_config_file,
    load_hyperparams,
    split_hyperparams,
)
from sb3_ablation.zoo.registry import register

REPO = Path(__file__).resolve().parents[2]
ENV = "Pendulum-v1"
# Tiny runs: 200 steps, gradient updates only for the last 50, a 32x32 network, no periodic evaluation
TINY = [
    "-n",
    "200",
    "--eval-freq",
    "-1",
    "--seed",
    "0",
    "--hyperparams",
    "learning_starts:150",
    "policy_kwargs:'dict(net_arch=[32, 32])'",
]


def run_train(tmp_path, algo, *extra):
    return train.main(["--algo", algo, "--env", ENV, "-f", str(tmp_path / "logs"), *TINY, *extra])


def model_path(tmp_path, algo, run=1):
    return tmp_path / "logs" / algo / f"{ENV}_{run}" / f"{ENV}.zip"


@pytest.mark.parametrize("algo", ["ablatable_td3", "ddpg_scratch"])
def test_train_writes_a_model_that_enjoy_loads(tmp_path, capsys, algo):
    assert run_train(tmp_path, algo) == 0
    model = ALGOS[algo].load(model_path(tmp_path, algo))
    assert type(model) is ALGOS[algo]
    assert model.num_timesteps == 200
    capsys.readouterr()
    assert enjoy.main(["--algo", algo, "--env", ENV, "-f", str(tmp_path / "logs"), "--no-render", "-n", "250"]) == 0
    assert "Episode Reward" in capsys.readouterr().out  # a Pendulum episode (200 steps) was played


def test_hyperparams_switch_override_reaches_saved_model(tmp_path):
    assert run_train(tmp_path, "ablatable_td3", "clipped_double_q:False", "target_networks:False") == 0
    model = AblatableTD3.load(model_path(tmp_path, "ablatable_td3"))
    expected = {switch: switch not in ("clipped_double_q", "target_networks") for switch in SWITCHES}
    assert model.switches == expected
    saved = yaml.unsafe_load((model_path(tmp_path, "ablatable_td3").parent / ENV / "config.yml").read_text())
    assert saved["clipped_double_q"] is False and saved["target_networks"] is False


def test_td3_key_still_means_sb3_td3(tmp_path):
    register()
    assert rl_zoo3.utils.ALGOS["td3"] is sb3.TD3 and rl_zoo3.utils.ALGOS["ddpg"] is sb3.DDPG
    assert rl_zoo3.utils.ALGOS["ablatable_td3"] is AblatableTD3 and rl_zoo3.utils.ALGOS["ddpg_scratch"] is DDPG
    assert rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER["td3"] is rl_zoo3.hyperparams_opt.sample_td3_params
    assert Path(default_config_file("td3")).parent == Path(rl_zoo3.utils.__file__).parent / "hyperparams"
    assert run_train(tmp_path, "td3") == 0
    model = sb3.TD3.load(model_path(tmp_path, "td3"))
    assert type(model) is sb3.TD3


def _study_trials(storage, name):
    return optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)


def test_optimize_in_default_sqlite_study_then_extend_it_and_export(tmp_path, capsys):
    logs = tmp_path / "logs"
    optimize = ["--algo", "ablatable_td3", "--env", ENV, "-f", str(logs), "-optimize", "-n", "200"]
    optimize += ["--n-evaluations", "1", "--eval-episodes", "1", "--sampler", "random", "--pruner", "none", "--seed", "1"]
    optimize += ["--no-optim-plots", "--tune-switches", "clipped_double_q", "--hyperparams", "learning_starts:190"]
    assert train.main([*optimize, "--n-trials", "1"]) == 0
    database = logs / "ablatable_td3" / "optuna.db"
    storage, name = f"sqlite:///{database}", f"ablatable_td3_{ENV}"
    assert database.is_file()
    assert len(_study_trials(storage, name)) == 1

    # a second invocation adds its trials to the same study
    exported = tmp_path / "tuned.yml"
    assert train.main([*optimize, "--n-trials", "1", "--export-best", str(exported)]) == 0
    trials = _study_trials(storage, name)
    assert len(trials) == 2
    assert all("clipped_double_q" in t.params for t in trials)  # the tuned switch is a categorical parameter
    assert all("target_networks" not in t.params for t in trials)  # the others are held at the config's values

    best = optuna.load_study(study_name=name, storage=storage).best_trial
    entry = load_hyperparams("ablatable_td3", ENV, conf_file=str(exported))
    assert entry["clipped_double_q"] is best.params["clipped_double_q"]
    assert entry["target_networks"] is True
    assert entry["learning_starts"] == 190  # the untuned values the study started from
    assert entry["batch_size"] == 2 ** best.params["batch_size_pow"]


def _add_trial(study, params, value):
    distributions = {
        "one_minus_gamma": FloatDistribution(0.0001, 0.03, log=True),
        "batch_size_pow": IntDistribution(2, 11),
        "learning_rate": FloatDistribution(1e-5, 0.002, log=True),
        "train_freq": IntDistribution(1, 10),
        "tau": FloatDistribution(0.001, 0.08, log=True),
        "noise_type": CategoricalDistribution(["ornstein-uhlenbeck", "normal", None]),
        "noise_std": FloatDistribution(0, 0.5),
        "net_arch": CategoricalDistribution(["small", "medium", "big"]),
        "buffer_size": CategoricalDistribution([10_000, 100_000, 1_000_000]),
    }
    study.add_trial(optuna.trial.create_trial(params=params, distributions=distributions, value=value))


def test_export_from_journal_storage_gives_an_entry_train_accepts(tmp_path, capsys):
    journal = str(tmp_path / "tune.log")
    study = optuna.create_study(storage=export.optuna_storage(journal), study_name="s", direction="maximize")
    params = dict(one_minus_gamma=0.02, batch_size_pow=5, learning_rate=1e-3, train_freq=2, tau=0.01)
    _add_trial(study, {**params, "noise_type": "normal", "noise_std": 0.2, "net_arch": "big", "buffer_size": 10_000}, -900.0)
    _add_trial(study, {**params, "noise_type": None, "noise_std": 0.3, "net_arch": "small", "buffer_size": 100_000}, -200.0)

    output = tmp_path / "tuned.yml"
    output.write_text("MountainCarContinuous-v0:\n  n_timesteps: 1000\n  policy: MlpPolicy\n")
    argv = ["--algo", "ddpg_scratch", "--env", ENV, "--storage", journal, "--study-name", "s", "-o", str(output)]
    assert export.main(argv) == 0

    entries = yaml.safe_load(output.read_text())
    assert entries["MountainCarContinuous-v0"] == {"n_timesteps": 1000, "policy": "MlpPolicy"}  # other entries kept
    entry = entries[ENV]
    assert "noise_type" not in entry and "noise_std" not in entry  # best trial: no action noise
    assert entry["policy_kwargs"] == "dict(net_arch=[64, 64])"
    assert entry["batch_size"] == 32 and entry["gradient_steps"] == 2 and entry["buffer_size"] == 100_000
    assert entry["gamma"] == pytest.approx(0.98)
    assert entry["n_timesteps"] == 20000  # untuned values from the shipped config

    assert run_train(tmp_path, "ddpg_scratch", "--conf-file", str(output)) == 0
    model = DDPG.load(model_path(tmp_path, "ddpg_scratch"))
    assert model.batch_size == 32 and model.action_noise is None
    assert not list(tmp_path.glob(".tuned.yml.*"))  # no temporary file left over


def _shipped_entries():
    for algo in ("ablatable_td3", "ddpg_scratch"):
        path = config_dir() / f"{algo}.yml"
        for env_id in yaml.safe_load(path.read_text()):
            yield pytest.param(algo, path, env_id, id=f"{algo}-{env_id}")


@pytest.mark.parametrize(("algo", "path", "env_id"), list(_shipped_entries()))
def test_every_shipped_entry_builds_a_model(algo, path, env_id):
    entry = yaml.safe_load(path.read_text())[env_id]
    make_id = ENV if env_id == "default" else env_id
    if make_id.split("-")[0] in ("HalfCheetah", "Hopper", "Walker2d", "Ant"):
        pytest.importorskip("mujoco")
    check_hyperparams(algo, entry, f"{path} [{env_id}]")
    env = gym.make(make_id)
    model_kwargs, n_timesteps, env_settings = split_hyperparams(entry, env)
    model = ALGOS[algo](env=env, **model_kwargs)
    assert n_timesteps >= 20000 and env_settings["n_envs"] == 1
    if algo == "ablatable_td3":
        assert model.switches == dict.fromkeys(SWITCHES, True)  # shipped configs are TD3 as published
    env.close()


def test_shipped_configs_cover_the_documented_environments():
    expected = {"default", "Pendulum-v1", "MountainCarContinuous-v0", "LunarLanderContinuous-v3", "BipedalWalker-v3"}
    expected |= {f"{name}-v5" for name in ("HalfCheetah", "Hopper", "Walker2d", "Ant")}
    for algo in ("ablatable_td3", "ddpg_scratch"):
        assert set(yaml.safe_load((REPO / "zoo_configs" / f"{algo}.yml").read_text())) == expected


BAD_INPUT = {
    "switch typo": (
        ["--hyperparams", "clipped_dobule_q:False"],
        ["--hyperparams", "'clipped_dobule_q'", "'clipped_double_q'"],
    ),
    "wrong type": (["--hyperparams", "batch_size:'big'"], ["batch_size", "integer"]),
    "switch not a bool": (["--hyperparams", "clipped_double_q:0"], ["clipped_double_q", "true/false"]),
    "not a python value": (["--hyperparams", "clipped_double_q:Flase"], ["clipped_double_q:Flase", "Flase"]),
    "unknown algorithm": (["--algo", "ablatable_tdd3"], ["'ablatable_tdd3'", "'ablatable_td3'"]),
    "unknown environment": (["--env", "Pendulm-v1"], ["'Pendulm-v1'", "'Pendulum-v1'"]),
    "key of another algorithm": (
        ["--algo", "ddpg_scratch", "--hyperparams", "policy_delay:3"],
        ["'policy_delay'", "ddpg_scratch"],
    ),
    "unknown tuned switch": (["-optimize", "--tune-switches", "clipped_q"], ["'clipped_q'", "'clipped_double_q'"]),
    "missing config": (["--conf-file", "missing.yml"], ["missing.yml", "not found"]),
    # passes the checks, fails while rl_zoo3 sets up the run (after it created the run folder): the env is named, with
    # its env_kwargs, not the config
    "env rejects kwargs": (
        ["--quick", "--env-kwargs", "no_such_arg:1"],
        ["could not make the evaluation env Pendulum-v1", "no_such_arg"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_one_clear_line_and_leaves_no_run_folder(tmp_path, capsys, case):
    extra, expected = BAD_INPUT[case]
    argv = ["--algo", "ablatable_td3", "--env", ENV, "-f", str(tmp_path / "logs"), "-n", "200", *extra]
    assert train.main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("sb3-ablation train: error:") and "\n" not in error
    for text in expected:
        assert text in error
    assert not (tmp_path / "logs").exists()


def test_typo_in_config_file_names_key_closest_key_and_file(tmp_path, capsys):
    config = tmp_path / "my_config.yml"
    config.write_text(f"{ENV}:\n  n_timesteps: 200\n  policy: MlpPolicy\n  clipped_dobule_q: false\n")
    with pytest.raises(
        ZooConfigError, match=r"my_config.yml \[Pendulum-v1\]: unknown hyperparameter 'clipped_dobule_q'.*'clipped_double_q'"
    ):
        load_hyperparams("ablatable_td3", ENV, conf_file=str(config))
    assert train.main(["--algo", "ablatable_td3", "--env", ENV, "-f", str(tmp_path / "logs"), "--conf-file", str(config)]) == 2
    assert "my_config.yml [Pendulum-v1]" in capsys.readouterr().err
    assert not (tmp_path / "logs").exists()


def test_enjoy_without_a_model_is_one_clear_line(tmp_path, capsys):
    assert enjoy.main(["--algo", "ddpg_scratch", "--env", ENV, "-f", str(tmp_path), "--no-render"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("sb3-ablation enjoy: error: no trained ddpg_scratch model") and "\n" not in error


def test_module_entry_point_reports_bad_key_without_traceback(tmp_path):
    argv = [
        sys.executable,
        "-m",
        "sb3_ablation",
        "train",
        "--algo",
        "ablatable_td3",
        "--env",
        ENV,
        "-f",
        str(tmp_path / "logs"),
    ]
    result = subprocess.run(
        [*argv, "--hyperparams", "clipped_dobule_q:False"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        # the checkout first on the path, so that this also runs without installing the package
        env={
            **os.environ,
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        },
        timeout=120,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "did you mean 'clipped_double_q'?" in result.stderr
    assert not (tmp_path / "logs").exists()


def test_every_subpackage_is_packaged():
    # pyproject lists packages explicitly (to ship zoo_configs/ as sb3_ablation/zoo_configs, and docs/studies' reports as
    # sb3_ablation/committed_studies): keep the list complete
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "sb3_ablation").rglob("__init__.py")}
    assert on_disk | {"sb3_ablation.zoo_configs", "sb3_ablation.committed_studies"} == listed


@pytest.mark.parametrize(
    "algo, switch_off",
    [("ablatable_td3", None), *[("ablatable_td3", switch) for switch in SWITCHES], ("ddpg_scratch", None)],
    ids=["td3", *[f"no_{switch}" for switch in SWITCHES], "ddpg_scratch"],
)
def test_trained_agent_continues_training_with_its_replay_buffer(tmp_path, capsys, algo, switch_off):
    switches = [f"{switch_off}:False"] if switch_off else []
    assert run_train(tmp_path, algo, *switches, "--save-replay-buffer", "--save-freq", "100") == 0
    first = model_path(tmp_path, algo)
    assert (first.parent / "replay_buffer.pkl").exists() and (first.parent / "rl_model_100_steps.zip").exists()
    capsys.readouterr()
    # -i with the same config: rl_zoo3 passes every hyperparameter (the switches too) to load, and the buffer
    assert run_train(tmp_path, algo, *switches, "-i", str(first)) == 0
    assert "Loading replay buffer" in capsys.readouterr().out
    continued = ALGOS[algo].load(model_path(tmp_path, algo, run=2))
    if algo == "ablatable_td3":
        assert continued.switches == {switch: switch != switch_off for switch in SWITCHES}
    assert continued.num_timesteps == 200 and continued._n_updates > ALGOS[algo].load(first)._n_updates


@pytest.mark.parametrize("algo", ["ablatable_td3", "ddpg_scratch"])
def test_trained_agent_without_buffer_and_enjoy_best_or_checkpoint(tmp_path, capsys, algo):
    eval_every = ["--eval-freq", "100", "--eval-episodes", "1", "--save-freq", "100"]
    assert run_train(tmp_path, algo, *eval_every) == 0
    first = model_path(tmp_path, algo)
    assert (first.parent / "best_model.zip").exists() and not (first.parent / "replay_buffer.pkl").exists()
    assert run_train(tmp_path, algo, "-i", str(first)) == 0
    assert ALGOS[algo].load(model_path(tmp_path, algo, run=2)).num_timesteps == 200
    for load in (["--load-best"], ["--load-checkpoint", "100"]):
        capsys.readouterr()
        args = ["--algo", algo, "--env", ENV, "-f", str(tmp_path / "logs"), "--exp-id", "1", "--no-render", "-n", "210"]
        assert enjoy.main([*args, *load]) == 0
        assert "Episode Reward" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["train", "enjoy"])
def test_rl_zoo_module_idiom_runs_the_same_command(command, capsys, monkeypatch):
    """``python -m sb3_ablation.train`` (rl-zoo's ``python -m rl_zoo3.train``) is ``sb3-ablation train``: the idiom's
    own process prints what the command line's entry point prints here (``python -m sb3_ablation`` in a process of its
    own: test_module_entry_point_reports_bad_key_without_traceback)."""
    from sb3_ablation.cli import main

    monkeypatch.setenv("COLUMNS", "80")  # argparse wraps its help to the terminal's width: the same one for both
    args = [sys.executable, "-m", f"sb3_ablation.{command}", "--help"]
    idiom = subprocess.run(args, capture_output=True, text=True, check=True)
    capsys.readouterr()
    assert main([command, "--help"]) == 0
    assert idiom.stdout == capsys.readouterr().out
    assert f"usage: sb3-ablation {command}" in idiom.stdout


def _stderr_warnings(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("sb3-ablation train: warning:")]


def test_a_budget_at_or_below_learning_starts_is_refused_and_quick_trains_it(tmp_path, capsys):
    # Pendulum's entry starts learning after 10000 steps: a 100-step run would only collect transitions
    argv = ["--algo", "ablatable_td3", "--env", ENV, "-f", str(tmp_path / "logs"), "-n", "100", "--eval-freq", "-1"]
    small = ["--hyperparams", "policy_kwargs:'dict(net_arch=[8])'"]
    for extra in ([], ["-optimize", "--n-trials", "1"]):  # one rule, with or without -optimize
        assert train.main([*argv, *small, *extra]) == 2
        captured = capsys.readouterr()
        assert captured.err == (
            "sb3-ablation train: error: the budget (-n 100) is at or below learning_starts (10000), so nothing would be "
            "trained: lower learning_starts (--hyperparams learning_starts:10) or add --quick (learning_starts a tenth "
            "of -n)\n"
        )
        assert captured.out == ""  # rl_zoo3's preamble is not printed for a refused run
        assert not (tmp_path / "logs").exists()
    # at learning_starts exactly, still nothing to train
    assert train.main([*argv, "--hyperparams", "learning_starts:100", "policy_kwargs:'dict(net_arch=[8])'"]) == 2
    assert "(-n 100) is at or below learning_starts (100)" in capsys.readouterr().err
    # --quick: learning_starts a tenth of -n, recorded in the run's config
    assert train.main([*argv, *small, "--quick"]) == 0
    assert "Seed: " in capsys.readouterr().out  # the preamble, once the run is set up
    model = AblatableTD3.load(model_path(tmp_path, "ablatable_td3"))
    assert (model.learning_starts, model._n_updates) == (10, 90)


def test_an_eval_freq_beyond_the_budget_is_said(tmp_path, capsys):
    # TINY: -n 200, learning starts at 150; one evaluation episode
    assert run_train(tmp_path, "ablatable_td3", "--eval-freq", "201", "--eval-episodes", "1") == 0
    assert _stderr_warnings(capsys) == [
        "sb3-ablation train: warning: --eval-freq 201 is beyond the budget (-n 200): no evaluation would happen "
        "(pass a smaller --eval-freq, or -1 for none)"
    ]
    assert not (model_path(tmp_path, "ablatable_td3").parent / "evaluations.npz").exists()  # indeed
    # at the budget: one evaluation, at the last step, and no warning
    assert run_train(tmp_path, "ablatable_td3", "--eval-freq", "200", "--eval-episodes", "1") == 0
    assert _stderr_warnings(capsys) == []
    assert (model_path(tmp_path, "ablatable_td3", run=2).parent / "evaluations.npz").is_file()


def test_budget_warnings_count_as_rl_zoo_does():
    source = "n_timesteps 20000 in zoo_configs/ablatable_td3.yml [Pendulum-v1]"
    entry = {"n_timesteps": 20000, "learning_starts": 10000}
    # rl_zoo3's default --eval-freq (25000) is beyond Pendulum's budget
    (warning,) = train.budget_warnings("ablatable_td3", entry, 20000, source, 25000, optimizing=False)
    assert warning.startswith(f"--eval-freq 25000 is beyond the budget ({source})")
    assert train.budget_warnings("ablatable_td3", entry, 20000, source, 25000, optimizing=True) == []  # not used
    # n_envs: rl_zoo3 evaluates every eval_freq // n_envs VecEnv steps; 1000 steps of 4 envs are 250 VecEnv steps
    entry = {"n_envs": 4, "learning_starts": 0}
    assert train.budget_warnings("ablatable_td3", entry, 1000, "-n 1000", 1003, optimizing=False) == []
    assert len(train.budget_warnings("ablatable_td3", entry, 1000, "-n 1000", 1004, optimizing=False)) == 1
    # learning_starts not in the entry: the algorithm's default (SB3's 100); none for an algorithm without it
    assert "learning_starts (100)" in train.short_budget_problem("ablatable_td3", {}, 100, "-n 100")
    assert train.short_budget_problem("ablatable_td3", {}, 101, "-n 101") is None
    assert train.short_budget_problem("ppo", {}, 10, "-n 10") is None


def test_train_runs_on_one_torch_thread_unless_told(tmp_path, monkeypatch, capsys):
    import torch as th

    calls: list[int] = []
    monkeypatch.setattr(th, "set_num_threads", calls.append)  # the test process keeps its own setting
    assert run_train(tmp_path, "ablatable_td3") == 0
    assert calls == [1]
    assert run_train(tmp_path, "ablatable_td3", "--num-threads", "3") == 0
    assert calls == [1, 3]
    assert run_train(tmp_path, "ablatable_td3", "--num-threads", "-1") == 0  # PyTorch's own choice: not set
    assert calls == [1, 3]
    assert yaml.unsafe_load((model_path(tmp_path, "ablatable_td3").parent / ENV / "args.yml").read_text())["num_threads"] == 1
    capsys.readouterr()
    with pytest.raises(SystemExit):
        train.train_parser().parse_args(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--num-threads NUM_THREADS Number of threads for PyTorch (default: 1, the fastest for these small" in help_text


def test_an_env_that_cannot_be_made_is_named_not_the_config(tmp_path, capsys):
    # TINY has no evaluation: the training env is the first env made
    argv = ["--algo", "ablatable_td3", "--env", ENV, "-f", str(tmp_path / "logs"), *TINY, "--env-kwargs", "no_such_arg:1"]
    assert train.main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("sb3-ablation train: error: could not make the training env Pendulum-v1 with env_kwargs=")
    assert "{'no_such_arg': 1}: TypeError" in error and "zoo_configs" not in error and "\n" not in error
    assert not (tmp_path / "logs").exists()
