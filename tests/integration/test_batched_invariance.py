"""Group invariance of the batched engine: a run's record and final weights are a function of its configuration and
seed, whatever group it was trained in (on one device and thread count)."""

import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env

from sb3_ablation import AblatableTD3
from sb3_ablation.batched import BatchedTD3
from sb3_ablation.study.plan.config import StudyConfig, StudyError, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.records import RunTask
from sb3_ablation.study.run.batched import RunGroup, core_group_size, default_group_size, execute_group, make_groups
from sb3_ablation.study.store.runs import model_path, read_run, run_path

# Gaussian exploration noise, target policy smoothing, a warm-up of random actions and the actor's delayed updates:
# every random stream of a run is drawn from
HYPERPARAMS = {
    "learning_starts": 50,
    "policy_kwargs": "dict(net_arch=[32, 32])",
    "batch_size": 32,
    "noise_type": "normal",
    "noise_std": 0.1,
}
# (200 steps: 150 updates, the first evaluation after 50 of them; evaluation episodes of 20 steps)
SETTINGS = dict(
    envs=["Pendulum-v1"], n_timesteps=200, eval_freq=100, eval_episodes=2, eval_max_episode_steps=20,
    hyperparams=HYPERPARAMS,
)  # fmt: skip


def _tasks(out, variant: str, seeds: list[int], device: str = "cpu") -> list[RunTask]:
    config = StudyConfig(**SETTINGS, seeds=max(seeds) + 2, variants=[variant], out=str(out), engine="batched", device=device)
    config.keep_models = True
    variants = config.variant_objects
    by_seed = {task.seed: task for task in make_tasks(config, variants, resolve_hyperparams(config, variants))}
    tasks = [by_seed[seed] for seed in seeds]
    for task in tasks:
        task.record = str(run_path(out, task.env, task.variant, task.seed).resolve())
    return tasks


def _run(out, groups: list[tuple[str, list[int]]], device: str = "cpu") -> None:
    """Train, in one group, the runs of (variant, seeds) pairs."""
    tasks = [task for variant, seeds in groups for task in _tasks(out, variant, seeds, device)]
    records = execute_group(RunGroup("Pendulum-v1", "+".join(variant for variant, _ in groups), tasks))
    assert all(record["status"] == "ok" for record in records), [record.get("traceback") for record in records]


def assert_same_run(folder_a, folder_b, variant: str, seed: int) -> None:
    """Equal evaluations, diagnostics and final weights (exactly) of one run recorded in two folders."""
    record_a, record_b = (read_run(run_path(folder, "Pendulum-v1", variant, seed)) for folder in (folder_a, folder_b))
    assert record_a["evaluations"]["timesteps"] == [0, 100, 200]
    assert record_a["evaluations"] == record_b["evaluations"]
    assert record_a["diagnostics"] == record_b["diagnostics"]
    state_a, state_b = (
        AblatableTD3.load(model_path(run_path(folder, "Pendulum-v1", variant, seed))).policy.state_dict()
        for folder in (folder_a, folder_b)
    )
    assert state_a.keys() == state_b.keys()
    for key in state_a:
        assert th.equal(state_a[key], state_b[key]), key


CUDA = pytest.mark.skipif(not th.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
@pytest.mark.parametrize("variant", ["td3", "no_deterministic_policy"])
def test_a_runs_record_is_the_same_alone_and_in_a_group(tmp_path, variant, device):
    th.set_num_threads(1)
    alone, grouped = tmp_path / "alone", tmp_path / "grouped"
    _run(alone, [(variant, [0])], device)
    _run(grouped, [(variant, [1, 0, 2])], device)  # seed 0 in the middle of a group of three
    assert_same_run(alone, grouped, variant, 0)
    # and the other agents of the group are runs of their own seeds
    first, second = (read_run(run_path(grouped, "Pendulum-v1", variant, seed)) for seed in (1, 2))
    assert first["evaluations"]["mean_return"] != second["evaluations"]["mean_return"]


# a 2^2 factorial of two switches an agent may have on its own, and the third one
FACTORIAL = ["td3", "no_clipped_double_q", "no_target_networks", "no_target_networks+no_clipped_double_q"]


def test_runs_of_several_variants_in_one_group_give_the_records_of_per_variant_groups(tmp_path):
    th.set_num_threads(1)
    mixed, separate = tmp_path / "mixed", tmp_path / "separate"
    # the factorial x 2 seeds and a run without target policy smoothing, in one group, variants interleaved
    _run(mixed, [(variant, [seed]) for seed in (1, 0) for variant in reversed(FACTORIAL)])
    _run(mixed / "smoothing", [("no_target_networks", [0]), ("no_target_policy_smoothing", [0]), ("td3", [1])])
    # the same cells in per-variant groups, and TD3 alone
    _run(separate, [("td3", [0])])
    _run(separate / "td3", [("td3", [1])])
    for variant in FACTORIAL[1:]:
        _run(separate, [(variant, [0, 1])])
    _run(separate, [("no_target_policy_smoothing", [0])])
    for variant in FACTORIAL:
        for seed in (0, 1):
            assert_same_run(mixed, separate / "td3" if (variant, seed) == ("td3", 1) else separate, variant, seed)
    for variant, seed in (("no_target_networks", 0), ("no_target_policy_smoothing", 0)):
        assert_same_run(mixed / "smoothing", separate, variant, seed)
    assert_same_run(mixed / "smoothing", separate / "td3", "td3", 1)
    # (a mixed group's checkpoints are its own: named by its runs)
    records = read_run(run_path(mixed, "Pendulum-v1", "no_clipped_double_q", 0))
    assert records["group_size"] == 8 and "twin_q_gap" not in records["diagnostics"]


def test_agents_with_and_without_delayed_policy_updates_in_one_group_give_their_per_variant_records(tmp_path):
    # a delayed agent's actor, Adam step count and targets move every second update, the others' every update; with
    # Gaussian actors the delayed agent also draws its samples (and logs its actor_std) at its own updates only
    th.set_num_threads(1)
    mixed, separate = tmp_path / "mixed", tmp_path / "separate"
    _run(mixed, [("no_delayed_policy_update", [0]), ("td3", [1]), ("no_delayed_policy_update", [1])])
    gaussian = "no_deterministic_policy"
    _run(mixed / "gaussian", [(f"{gaussian}+no_delayed_policy_update", [0]), (gaussian, [0])])
    _run(separate, [("no_delayed_policy_update", [1, 0])])
    _run(separate, [("td3", [1])])
    _run(separate, [(f"{gaussian}+no_delayed_policy_update", [0])])
    _run(separate, [(gaussian, [0])])
    for variant, seed in (("no_delayed_policy_update", 0), ("no_delayed_policy_update", 1), ("td3", 1)):
        assert_same_run(mixed, separate, variant, seed)
    for variant in (f"{gaussian}+no_delayed_policy_update", gaussian):
        assert_same_run(mixed / "gaussian", separate, variant, 0)
    # (the two schedules did differ: the delayed agent's actor did not follow the other's)
    undelayed, delayed = (
        read_run(run_path(mixed / "gaussian", "Pendulum-v1", variant, 0))["diagnostics"]["actor_std"]
        for variant in (f"{gaussian}+no_delayed_policy_update", gaussian)
    )
    assert undelayed[-1] != delayed[-1]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
def test_deterministic_and_gaussian_actors_in_one_group_give_their_per_variant_records(tmp_path, device):
    # the group's actor is Gaussian: a deterministic agent's is its squashed mean (no sample drawn, its own action
    # noise), with its initial weights; mixed with a delayed policy update too
    th.set_num_threads(1)
    mixed, separate = tmp_path / "mixed", tmp_path / "separate"
    gaussian = "no_deterministic_policy"
    # (a Gaussian agent first: the group's settings are built from its hyperparameters)
    cells = [(gaussian, 0), ("td3", 0), (f"{gaussian}+no_delayed_policy_update", 1), ("no_delayed_policy_update", 1)]
    _run(mixed, [(variant, [seed]) for variant, seed in cells], device)
    for variant, seed in cells:
        _run(separate, [(variant, [seed])], device)
        assert_same_run(mixed, separate, variant, seed)
    records = {variant: read_run(run_path(mixed, "Pendulum-v1", variant, seed)) for variant, seed in cells}
    assert "actor_std" in records[gaussian]["diagnostics"] and "actor_std" not in records["td3"]["diagnostics"]
    # (a group's warnings are those of building its runs: none of its own, e.g. about the kept action noise)
    runs_warnings = {
        text for variant, seed in cells for text in read_run(run_path(separate, "Pendulum-v1", variant, seed))["warnings"]
    }
    assert all(set(record["warnings"]) <= runs_warnings for record in records.values())


def test_a_design_defaults_to_one_group_on_cuda_and_per_variant_groups_on_cpu(tmp_path):
    config = StudyConfig(**SETTINGS, seeds=3, variants=["factorial:clipped_double_q,replay_buffer"], out=str(tmp_path))
    config.engine = "batched"
    variants = config.variant_objects
    tasks = make_tasks(config, variants, resolve_hyperparams(config, variants))
    assert default_group_size(tasks, design=True) is None  # CPU: one group per variant
    # groups sized to the cores (--group-size): 12 runs, 6 with a replay buffer and 6 without (it shapes the whole
    # group), each half in one group per worker
    assert core_group_size(tasks, workers=2) == 3
    for task in tasks:
        task.group_size = 3
    groups = make_groups(tasks)
    assert [len(group.runs) for group in groups] == [3, 3, 3, 3]
    assert groups[0].variant == "td3+no_clipped_double_q"  # clipped_double_q mixes
    assert [len({task.switches["replay_buffer"] for task in group.runs}) for group in groups] == [1, 1, 1, 1]
    assert core_group_size(tasks, workers=1) == 6 and core_group_size(tasks, workers=5) == 2
    for task in tasks:
        task.device = "cuda"
    assert default_group_size(tasks, design=True) == len(tasks)  # every run that can share a group
    assert default_group_size(tasks, design=False) is None  # named variants: one group per variant


def test_groups_mix_only_variants_an_agent_can_have_and_hold_at_most_group_size_runs(tmp_path):
    config = StudyConfig(**SETTINGS, seeds=3, variants=["factorial:clipped_double_q,replay_buffer"], out=str(tmp_path))
    config.engine, config.group_size = "batched", 4
    variants = config.variant_objects
    groups = make_groups(make_tasks(config, variants, resolve_hyperparams(config, variants)))
    # replay_buffer shapes the whole group: 6 runs with a buffer and 6 without, each in groups of at most 4
    assert [len(group.runs) for group in groups] == [4, 2, 4, 2]
    for group in groups:
        assert len({task.switches["replay_buffer"] for task in group.runs}) == 1
    assert groups[0].variant == "td3+no_clipped_double_q"
    # without a group size: one group per variant, as before
    config.group_size = None
    assert len(make_groups(make_tasks(config, variants, resolve_hyperparams(config, variants)))) == 4


def test_agents_that_differ_in_a_switch_of_the_whole_group_are_refused_in_one_line():
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    switches = [{"replay_buffer": True}, {"replay_buffer": False}]
    with pytest.raises(ValueError, match=r"agents must share replay_buffer \(only clipped_double_q, ") as error:
        BatchedTD3("MlpPolicy", env, agent_switches=switches, learning_starts=10)
    assert "\n" not in str(error.value)
    with pytest.raises(StudyError, match="group_size is for the batched engine"):
        StudyConfig(**SETTINGS, seeds=2, variants=["td3"], out="unused", group_size=2)
