"""The contract between sb3_ablation.zoo.adapter and rl_zoo3 (checked: 2.9.2), and the SB3 internals the algorithms use.

Each test names what the adapter relies on; when an rl_zoo3 (or SB3) release changes it, the failure says what to
revisit. The last test checks that no other module of the zoo integration, the commands or the CLI imports rl_zoo3.
"""

import argparse
import ast
import hashlib
import inspect
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import rl_zoo3.callbacks
import rl_zoo3.enjoy
import rl_zoo3.exp_manager
import rl_zoo3.hyperparams_opt
import rl_zoo3.train
import rl_zoo3.utils
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import NormalActionNoise
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from sb3_ablation.zoo import adapter
from sb3_ablation.zoo.registry import register

PACKAGE = Path(adapter.__file__).resolve().parents[1]
#: sha256 of rl_zoo3 2.9.2's train() from its parse_args() on: the part that adapter.run_train is line for line
TRAIN_BODY_SHA256 = "9d1ede2fb6748447052c34832310732a89bd2251def11cf51a592d2964e09ca2"


def _train_body() -> str:
    source = inspect.getsource(rl_zoo3.train.train)
    return source[source.index("args = parser.parse_args()") :]


def _run_train_tree() -> ast.FunctionDef:
    (tree,) = ast.parse(textwrap.dedent(inspect.getsource(adapter.run_train))).body
    assert isinstance(tree, ast.FunctionDef)
    return tree


def test_rl_zoo3s_train_body_is_the_one_run_train_mirrors():
    digest = hashlib.sha256(_train_body().encode()).hexdigest()
    assert digest == TRAIN_BODY_SHA256, (
        f"rl_zoo3 {rl_zoo3.__version__}'s train() changed after its parse_args() since rl_zoo3 "
        f"{adapter.RL_ZOO3_CHECKED}: make sb3_ablation.zoo.adapter.run_train match it again, then update this hash"
    )


@pytest.mark.parametrize("command", ["train", "enjoy", "record_video"])
def test_each_command_builds_its_parser_then_parses_first(command):
    register()
    parser = adapter.zoo_command_parser(command)
    assert isinstance(parser, argparse.ArgumentParser)
    assert argparse.ArgumentParser.parse_args.__qualname__ == "ArgumentParser.parse_args"  # restored
    dests = adapter.zoo_argument_names(command)
    assert {"algo", "env", "n_timesteps", "env_kwargs"} <= set(dests)
    # our parser: the same options (names, defaults), with one-line errors
    ours = adapter.command_parser(command, f"sb3-ablation {command}")
    assert vars(ours.parse_args([])) == vars(parser.parse_args([]))
    assert ours.format_usage().startswith(f"usage: sb3-ablation {command} ")
    with pytest.raises(SystemExit) as exit_info:
        ours.parse_args(["--no-such-option"])
    assert exit_info.value.code == 2


def test_the_patch_of_parse_args_is_undone_on_error():
    original = argparse.ArgumentParser.parse_args
    with pytest.raises(KeyError), adapter._zoo_parse_args(["--x"]):
        raise KeyError("inside")
    assert argparse.ArgumentParser.parse_args is original
    # a parse with explicit arguments inside is an ordinary one
    with adapter._zoo_parse_args(None):
        parser = argparse.ArgumentParser()
        parser.add_argument("--x", type=int)
        assert parser.parse_args(["--x", "3"]).x == 3


def test_other_threads_parse_as_usual_while_a_zoo_command_parses(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["prog", "--x", "5"])
    parser = argparse.ArgumentParser()
    parser.add_argument("--x", type=int)
    original = argparse.ArgumentParser.parse_args
    in_thread: list[Any] = []
    with adapter._zoo_parse_args(None):
        thread = threading.Thread(target=lambda: in_thread.append(parser.parse_args()))
        thread.start()
        thread.join()
        with pytest.raises(adapter._ParserBuilt):  # this thread's parse of sys.argv is rl_zoo3's command parse
            parser.parse_args()
    assert in_thread == [argparse.Namespace(x=5)]
    assert argparse.ArgumentParser.parse_args is original


def test_two_threads_running_zoo_commands_take_turns_and_leave_argparse_as_it_was():
    original = argparse.ArgumentParser.parse_args

    def command(inside: threading.Event, leave: threading.Event) -> None:
        with adapter._zoo_parse_args(["--x", "1"]):
            inside.set()
            leave.wait(10)

    first_inside, first_leave, second_inside, second_leave = (threading.Event() for _ in range(4))
    first = threading.Thread(target=command, args=(first_inside, first_leave))
    first.start()
    assert first_inside.wait(10)
    second = threading.Thread(target=command, args=(second_inside, second_leave))
    second.start()
    # the second waits until the first has restored argparse (else it would save the first's replacement as the
    # original, and restore that when it leaves after the first)
    assert not second_inside.wait(0.5)
    first_leave.set()
    first.join()
    assert second_inside.wait(10)
    second_leave.set()
    second.join()
    assert argparse.ArgumentParser.parse_args is original


def _manager_call(tree: ast.AST, name: str) -> ast.Call:
    (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]
    return call


def test_run_train_reads_only_train_options_and_builds_the_manager_as_rl_zoo3_does():
    tree = _run_train_tree()
    read = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args"
    }
    written_by_the_body = {"command", "saved_hyperparams"}  # set on args by rl_zoo3's own body (with --track)
    assert read - written_by_the_body <= set(adapter.zoo_argument_names("train"))
    ours = _manager_call(tree, "manager_class")
    theirs = _manager_call(ast.parse(textwrap.dedent(inspect.getsource(rl_zoo3.train.train))), "ExperimentManager")
    assert [ast.dump(arg) for arg in ours.args] == [ast.dump(arg) for arg in theirs.args]
    assert [ast.dump(keyword) for keyword in ours.keywords] == [ast.dump(keyword) for keyword in theirs.keywords]
    parameters = list(inspect.signature(rl_zoo3.exp_manager.ExperimentManager.__init__).parameters)[1:]
    assert len(ours.args) <= len(parameters)
    assert {keyword.arg for keyword in ours.keywords} <= set(parameters[len(ours.args) :])


def test_the_manager_has_the_methods_and_attributes_we_use(tmp_path):
    manager_class = rl_zoo3.exp_manager.ExperimentManager
    for method in ("setup_experiment", "learn", "save_trained_model", "hyperparameters_optimization", "read_hyperparameters"):
        assert callable(getattr(manager_class, method)), method
    assert list(inspect.signature(manager_class.create_envs).parameters) == ["self", "n_envs", "eval_env", "no_log"]
    # the private preprocessing, called by adapter.preprocess_hyperparams in setup_experiment's order
    assert list(inspect.signature(manager_class._preprocess_hyperparams).parameters) == ["self", "hyperparams"]
    assert list(inspect.signature(manager_class._preprocess_action_noise).parameters) == [
        "self",
        "hyperparams",
        "saved_hyperparams",
        "env",
    ]
    source = inspect.getsource(manager_class.setup_experiment)
    assert source.index("self._preprocess_hyperparams(") < source.index("self._preprocess_action_noise(")
    manager = manager_class(argparse.Namespace(), "td3", "Pendulum-v1", log_folder=str(tmp_path), hyperparams={"a": 1})
    for attribute in (
        "custom_hyperparams", "config", "n_timesteps", "log_folder", "log_path", "save_path", "params_path", "env_kwargs",
        "eval_env_kwargs", "verbose", "storage", "study_name", "algo", "eval_freq", "optimize_hyperparameters", "n_envs",
        "normalize", "normalize_kwargs", "frame_stack", "monitor_kwargs",
    ):  # fmt: skip
        assert hasattr(manager, attribute), attribute
    assert not list(tmp_path.iterdir())  # building a manager writes nothing
    # the preprocessing of a manager built normally: schedules, policy_kwargs strings, action noise
    entry = {"n_timesteps": 1000, "policy": "MlpPolicy", "learning_rate": "lin_1e-3", "noise_type": "normal"}
    entry |= {"noise_std": 0.2, "policy_kwargs": "dict(net_arch=[8])", "n_envs": 2}
    model_kwargs, n_timesteps, settings = adapter.preprocess_hyperparams(entry, gym.make("Pendulum-v1"))
    assert n_timesteps == 1000 and settings["n_envs"] == 2 and model_kwargs["policy_kwargs"] == {"net_arch": [8]}
    assert isinstance(model_kwargs["action_noise"], NormalActionNoise) and model_kwargs["learning_rate"](1.0) == 1e-3


@pytest.mark.parametrize("write_files", [True, False])
def test_the_managers_handles_on_its_private_parts(tmp_path, write_files):
    assert list(inspect.signature(rl_zoo3.exp_manager.ExperimentManager._save_config).parameters) == [
        "self",
        "saved_hyperparams",
    ]
    register()
    overrides = {"learning_starts": 10, "policy_kwargs": "dict(net_arch=[8])", "batch_size": 4}
    manager = adapter.ZooExperimentManager(
        argparse.Namespace(), "ablatable_td3", "Pendulum-v1", log_folder=str(tmp_path), hyperparams=overrides,
        config=str(PACKAGE.parent / "zoo_configs" / "ablatable_td3.yml"), eval_freq=-1, verbose=0,
    )  # fmt: skip
    manager.write_files = write_files
    model, _ = manager.setup_experiment()
    assert manager.model_hyperparams["learning_starts"] == model.learning_starts == 10
    assert manager.model_hyperparams["policy_kwargs"] == {"net_arch": [8]}
    written = {path.name for path in tmp_path.rglob("*") if path.is_file()}
    assert written == ({"config.yml", "args.yml", "command.txt", "0.monitor.csv"} if write_files else {"0.monitor.csv"})
    model.get_env().close()


def test_registration_goes_into_the_tables_rl_zoo3_reads():
    register()
    assert rl_zoo3.exp_manager.ALGOS is rl_zoo3.utils.ALGOS is rl_zoo3.enjoy.ALGOS
    assert rl_zoo3.exp_manager.HYPERPARAMS_SAMPLER is rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER
    assert rl_zoo3.exp_manager.HYPERPARAMS_CONVERTER is rl_zoo3.hyperparams_opt.HYPERPARAMS_CONVERTER
    for name in ("ablatable_td3", "ddpg_scratch"):
        assert name in rl_zoo3.utils.ALGOS and name in rl_zoo3.hyperparams_opt.HYPERPARAMS_SAMPLER
        assert name in rl_zoo3.hyperparams_opt.HYPERPARAMS_CONVERTER
    with pytest.raises(RuntimeError, match="already has an algorithm called 'td3'"):
        adapter.register_algorithm("td3", object, dict, dict)


def test_command_line_values_evaluate_as_storedict_does():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hyperparams", nargs="+", action=rl_zoo3.utils.StoreDict)
    items = ["policy_kwargs:dict(net_arch=[8, 8])", "learning_rate:1e-3", "train_freq:[1, 'episode']", "f:nn.ReLU"]
    expected = parser.parse_args(["--hyperparams", *items]).hyperparams
    ours = {item.partition(":")[0]: adapter.evaluate_command_line_value(item.partition(":")[2]) for item in items}
    assert ours == expected and ours["f"] is rl_zoo3.utils.nn.ReLU


def test_config_values_evaluate_in_the_managers_namespace():
    assert adapter.evaluate_config_value("dict(activation_fn=nn.ReLU)") == {"activation_fn": rl_zoo3.exp_manager.nn.ReLU}
    assert Path(adapter.zoo_default_config("td3")).is_file()


#: sha256 of rl_zoo3 2.9.2's ExperimentManager.objective, whose sampling, evaluation frequency and callbacks
#: ZooExperimentManager.sample_trial / trial_eval_freq / trial_callbacks are (the multi-seed objective's parts)
OBJECTIVE_SHA256 = "9b529a4c013883f384da9e47bae3546b19933d0a93ce7d7cdf8f83bcf2da6635"


def test_rl_zoo3s_objective_is_the_one_the_trial_parts_mirror():
    source = inspect.getsource(rl_zoo3.exp_manager.ExperimentManager.objective)
    assert hashlib.sha256(source.encode()).hexdigest() == OBJECTIVE_SHA256, (
        f"rl_zoo3 {rl_zoo3.__version__}'s ExperimentManager.objective changed since rl_zoo3 {adapter.RL_ZOO3_CHECKED}: "
        "make ZooExperimentManager.sample_trial, trial_eval_freq and trial_callbacks (and sb3_ablation.zoo.trials) "
        "match it again, then update this hash"
    )
    manager = rl_zoo3.exp_manager.ExperimentManager(argparse.Namespace(), "td3", "Pendulum-v1", log_folder="unused")
    for attribute in (
        "seed", "device", "n_eval_envs", "optimization_log_path", "specified_callbacks", "deterministic_eval",
        "n_actions", "n_evaluations", "n_eval_episodes",
    ):  # fmt: skip
        assert hasattr(manager, attribute), attribute


def test_rl_zoo3s_trial_callback_reports_each_evaluation_and_asks_the_pruner():
    from sb3_ablation.zoo.trials import SeedReports

    class Model:  # what the callback reads of a model
        num_timesteps = 0

        def get_env(self):
            return DummyVecEnv([lambda: gym.make("Pendulum-v1")])

        def get_vec_normalize_env(self):
            return None

        def predict(self, observation, state=None, episode_start=None, deterministic=True):
            return np.zeros((len(observation), 1), dtype=np.float32), None

    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.monitor import Monitor

    model = Model()
    model.logger = Logger(None, [])
    reports = SeedReports()
    callbacks, eval_callback = adapter.ZooExperimentManager(
        argparse.Namespace(), "td3", "Pendulum-v1", log_folder="unused", n_eval_episodes=1
    ).trial_callbacks(DummyVecEnv([lambda: Monitor(gym.make("Pendulum-v1"))]), reports, 2, None)
    assert callbacks == [eval_callback] and isinstance(eval_callback, rl_zoo3.callbacks.TrialEvalCallback)
    eval_callback.init_callback(model)
    assert [eval_callback.on_step() for _ in range(4)] == [True] * 4  # SeedReports never prunes
    assert len(reports.values) == 2 and reports.values[-1] == eval_callback.last_mean_reward  # every 2 calls


# SB3 internals that the algorithms use (not rl_zoo3's, but checked the same way)


def test_sb3s_off_policy_progress_comes_from_total_timesteps():
    # sb3_ablation.zoo.trials.WholeBudgetProgress sets it, once SB3's _setup_learn has, for learning in several calls
    from sb3_ablation import DDPG
    from sb3_ablation.zoo.trials import WholeBudgetProgress

    model = DDPG("MlpPolicy", "Pendulum-v1", learning_starts=1000, policy_kwargs={"net_arch": [4]})
    model.learn(50, reset_num_timesteps=False)
    assert model._current_progress_remaining == 0.0  # this call's end is SB3's whole budget
    model.learn(50, callback=WholeBudgetProgress(400), reset_num_timesteps=False)
    assert model.num_timesteps == 100 and model._current_progress_remaining == 1 - 100 / 400


def test_sb3s_replay_buffer_holds_its_settings_and_the_storage_we_share():
    from sb3_ablation.common.buffers import STORAGE

    buffer = ReplayBuffer(10, gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-1, 1, (1,)), n_envs=2)
    settings = {"buffer_size", "observation_space", "action_space", "obs_shape", "action_dim", "device", "n_envs"}
    settings |= {"optimize_memory_usage", "handle_timeout_termination"}
    assert set(vars(buffer)) == settings | set(STORAGE), "SB3's ReplayBuffer holds other state: revisit sharing_storage"


def test_sb3s_vecenv_seeds_the_next_reset_from_seeds():
    class Seeded(DummyVecEnv):
        def seed(self, seed=None):
            self._seeds = [seed, seed + 10]
            return self._seeds

    venv = Seeded([lambda: gym.make("Pendulum-v1")] * 2)
    venv.seed(3)
    first = venv.reset()
    assert np.array_equal(first[1], gym.make("Pendulum-v1").reset(seed=13)[0])
    assert venv._seeds == [None, None]  # used once
    assert "self._seeds = " in inspect.getsource(VecEnv.seed)


def test_only_the_adapter_imports_rl_zoo3():
    files = [
        *sorted((PACKAGE / "zoo").glob("*.py")),
        PACKAGE / "train.py",
        PACKAGE / "enjoy.py",
        PACKAGE / "cli" / "__init__.py",
    ]
    offenders = []
    for path in files:
        if path.name == "adapter.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if any(name.split(".")[0] in ("rl_zoo3", "huggingface_sb3") for name in names):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders, f"rl_zoo3 imported outside sb3_ablation/zoo/adapter.py: {offenders}"
