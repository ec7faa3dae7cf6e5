"""The throughput benchmark's harness: a tiny run prints complete tables; no timing is asserted (speed lives in the
benchmark scripts, not in tests)."""

import gc
import json

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.buffers import ReplayBuffer

from sb3_ablation.bench import models
from sb3_ablation.bench.cli import main
from sb3_ablation.bench.measure import time_interleaved
from sb3_ablation.bench.models import collect_random_transitions, fill_replay_buffer

GRADIENT_MODELS = ["sb3_td3", "td3", "td3_no_replay_buffer", "td3_speed", "sb3_ddpg", "ddpg"]
LEARN_MODELS = ["sb3_td3", "td3"]


def table_rows(text: str, title: str) -> dict[str, list[str]]:
    """Rows of the markdown table under the heading containing ``title``: model name -> its cells."""
    section = text.split(title, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| ["):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            rows[cells[1]] = cells
    return rows


@pytest.fixture
def frozen_objects():
    """
    The objects alive now (torch, pytest, the suite's modules) kept out of garbage collection during the test: the
    benchmark collects garbage before each timed call, and a collection then walks only the objects made since.
    """
    # frozen too: torch imports these on first use (dynamo at an optimizer's first step), and they hold many objects
    import torch._dynamo
    import torch.profiler  # noqa: F401

    gc.freeze()
    yield
    gc.unfreeze()


@pytest.mark.usefixtures("frozen_objects")
def test_quick_benchmark_prints_complete_tables(tmp_path, capsys):
    json_path = tmp_path / "bench.json"
    argv = ["--quick", "--models", ",".join(GRADIENT_MODELS), "--learn-models", ",".join(LEARN_MODELS), "--profile-top", "3"]
    assert main([*argv, "--json", str(json_path)]) == 0
    output = capsys.readouterr().out

    gradient = table_rows(output, "Gradient steps per second")
    assert sorted(gradient) == sorted(GRADIENT_MODELS)
    for model, cells in gradient.items():
        assert cells[0] == "[32, 32]"
        median, low, high = (float(cell) for cell in cells[2:5])
        assert 0 < low <= median <= high, model
        assert float(cells[5].rstrip("x")) > 0, model
        # matmul share of a step: the profiled matmul time over the unprofiled median step, i.e. the median over the
        # matmul-bound rate (two passes: on a loaded machine it can pass 100%)
        share, matmul_bound = float(cells[7].rstrip("%")), float(cells[8])
        assert share > 0 and matmul_bound > 0, model
        assert abs(share - 100 * median / matmul_bound) <= 1, model
    assert gradient["sb3_td3"][5] == gradient["sb3_ddpg"][5] == "1.00x"  # each baseline against itself

    operators = output.split("Costliest operators", 1)[1].split("\n## ", 1)[0]
    operator_rows = [line for line in operators.splitlines() if line.startswith("| [")]
    assert len(operator_rows) == 3 * len(GRADIENT_MODELS)
    assert all(float(line.strip("|").split("|")[-1]) > 0 for line in operator_rows)  # microseconds per step

    learn = table_rows(output, "learn() environment steps per second")
    assert sorted(learn) == sorted(LEARN_MODELS)
    for cells in learn.values():
        assert float(cells[2]) > 0
        train_ms, action_ms, env_ms, store_ms = (float(cell) for cell in cells[7:11])
        assert train_ms > 0 and action_ms > 0 and env_ms > 0 and store_ms > 0  # each phase of a step was timed
    assert "Hardware: " in output and "torch thread(s)" in output
    assert "[32, 32]: speed mode: float32 hidden-layer products, critics batched in one network" in output

    # the JSON holds the same rows, one rate per repeat, and the ratio of medians
    saved = json.loads(json_path.read_text())
    rows = {row["model"]: row for row in saved["gradient_steps"]}
    assert sorted(rows) == sorted(GRADIENT_MODELS)
    assert len(rows["td3"]["per_repeat"]) == saved["config"]["repeats"] == 2
    assert rows["td3"]["ratio"] == pytest.approx(rows["td3"]["median"] / rows["sb3_td3"]["median"])
    assert rows["ddpg"]["baseline"] == "sb3_ddpg"
    assert [row["model"] for row in saved["learn"]] == LEARN_MODELS
    assert saved["hardware"]["cpu"] and isinstance(saved["hardware"]["bfloat16_instructions"], bool)
    assert rows["td3_speed"]["speed_mode"].startswith("speed mode: float32") and rows["td3"]["speed_mode"] is None
    assert [sorted(row["phases_ms"]) for row in saved["learn"]] == [["action", "env step", "loop", "store", "train"]] * 2
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bench.json"]  # no temporary file left behind


def test_fill_replay_buffer_keeps_the_newest_transitions_that_fit():
    transitions = collect_random_transitions("Pendulum-v1", 8, seed=1)
    assert transitions["observations"].shape == (8, 1, 3)
    # consecutive transitions chain up, except across episode ends
    assert np.allclose(transitions["observations"][1:], transitions["next_observations"][:-1])
    assert np.all(np.abs(transitions["actions"]) <= 1.0)  # stored scaled, like TD3 does

    env = gym.make("Pendulum-v1")
    large = ReplayBuffer(20, env.observation_space, env.action_space)
    assert fill_replay_buffer(large, transitions) == 8
    assert (large.pos, large.full) == (8, False)
    assert np.array_equal(large.rewards[:8], transitions["rewards"])

    small = ReplayBuffer(5, env.observation_space, env.action_space)
    assert fill_replay_buffer(small, transitions) == 5
    assert (small.pos, small.full) == (0, True)
    assert np.array_equal(small.actions, transitions["actions"][3:])
    assert small.sample(4).observations.shape == (4, 3)


@pytest.mark.usefixtures("frozen_objects")
def test_timing_is_interleaved_with_rotating_order():
    calls = []
    functions = {name: (lambda n=name: calls.append(n)) for name in ("a", "b", "c")}
    rates = time_interleaved(functions, work_per_run=10, repeats=3, on_repeat=lambda repeat: calls.append(repeat))
    assert calls == ["a", "b", "c", 0, "b", "c", "a", 1, "c", "a", "b", 2]
    assert all(len(values) == 3 and min(values) > 0 for values in rates.values())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--net-arch", "400,x"], "--net-arch: expected comma-separated positive layer sizes such as 400,300, got '400,x'"),
        (["--models", "td3,td4"], "--models: unknown model 'td4'"),
        (["--repeats", "0"], "--repeats: expected a positive integer, got 0"),
        (["--learn-steps", "100", "--learning-starts", "100"], "--learning-starts: 100 leaves no training"),
    ],
)
def test_bad_options_give_a_one_line_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_every_model_name_builds_its_variant():
    assert models.model_class_and_kwargs("td3_no_clipped_double_q")[1] == {"clipped_double_q": False}
    assert models.model_class_and_kwargs("td3_speed")[1] == {"speed_mode": True}
    assert models.baseline_of("ddpg_speed") == "sb3_ddpg"
    assert models.baseline_of("td3_no_replay_buffer") == "sb3_td3"
    with pytest.raises(ValueError, match="unknown model 'td4'"):
        models.model_class_and_kwargs("td4")
