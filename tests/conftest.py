from collections.abc import Callable

import pytest
import torch as th

from sb3_ablation.study.plan.config import StudyConfig

# One torch thread: the parity tests compare bits, and CI runs two test workers on two cores
th.set_num_threads(1)

# A study that runs in seconds: Pendulum-v1, 300 steps, small networks, one short evaluation episode
TINY_STUDY = dict(
    envs=["Pendulum-v1"],
    n_timesteps=300,
    eval_freq=150,
    eval_episodes=1,
    eval_max_episode_steps=50,
    hyperparams={"learning_starts": 100, "policy_kwargs": "dict(net_arch=[16, 16])", "batch_size": 32},
    workers=2,
    progress=False,
    # the tests load final models to compare weights; studies keep none by default
    keep_models=True,
)


def make_tiny_study(out, variants=("td3", "no_clipped_double_q"), seeds=2, **overrides) -> StudyConfig:
    """The settings of a tiny study writing into ``out`` (``overrides``: any other StudyConfig fields)."""
    return StudyConfig(**{**TINY_STUDY, "variants": list(variants), "seeds": seeds, "out": str(out), **overrides})


@pytest.fixture
def tiny_study() -> Callable[..., StudyConfig]:
    """:func:`make_tiny_study`."""
    return make_tiny_study
