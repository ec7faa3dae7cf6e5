from collections.abc import Callable
from pathlib import Path

import pytest
import torch as th

from sb3_ablation.study.plan.config import StudyConfig

# One torch thread: the parity tests compare bits, and CI runs two test workers on two cores
th.set_num_threads(1)

# The files that take longest, longest first (measured with `pytest --durations=0` on 2 cores: 110 s down to 13 s). The
# two workers take whole files in collection order (`make test`: --dist loadfile --no-loadscope-reorder), so these go
# first and the short files fill in at the end (no long file starts while the other worker is about to finish). A file
# not listed keeps its place after them.
LONGEST_FIRST = [
    "integration/test_clean_install.py",
    "integration/test_report.py",
    "integration/test_batched_compiled.py",
    "integration/test_batched_resume.py",
    "integration/test_batched_compiled_resume.py",
    "integration/test_batched.py",
    "integration/test_cli_errors.py",
    "integration/test_batched_invariance.py",
    "integration/test_study_robustness.py",
    "unit/test_trial_seeds.py",
    "integration/test_notebook.py",
    "integration/test_study.py",
    "integration/test_study_runs.py",
    "integration/test_tuning_settings.py",
    "integration/test_zoo.py",
    "integration/test_study_tuning.py",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Path(__file__).parent
    missing = [name for name in LONGEST_FIRST if not (tests / name).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py's LONGEST_FIRST names files that are not there: {', '.join(missing)}")
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}

    def place(item: pytest.Item) -> int:
        return rank.get(item.path.relative_to(tests).as_posix(), len(rank)) if item.path.is_relative_to(tests) else len(rank)

    items.sort(key=place)  # (stable: the order within a file and among the rest is kept)


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
