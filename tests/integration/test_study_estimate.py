"""The study's time estimate, timed in worker processes as the study starts them (a few seconds of two workers)."""

from sb3_ablation.study.plan.config import StudyConfig
from sb3_ablation.study.run.estimate import estimate_study, format_duration, study_tasks


def test_the_estimate_times_the_workers_start_up_and_adds_it(tmp_path):
    config = StudyConfig(
        envs=["Pendulum-v1"], variants=["td3"], seeds=2, n_timesteps=5_000, eval_freq=2_500, eval_episodes=1,
        hyperparams={"policy_kwargs": "dict(net_arch=[8])", "learning_starts": 500}, out=str(tmp_path / "study"),
    )  # fmt: skip
    _, pending = study_tasks(config)
    estimate = estimate_study(pending, 2, "process", "td3")
    assert estimate.seconds is not None and 0 < estimate.start_up < estimate.seconds  # the start-up, then the runs
    assert estimate.line().startswith("2 runs on 2 workers: about ")
    assert f"the workers' start-up, {format_duration(estimate.start_up)}, " in estimate.line()
    assert not (tmp_path / "study").exists()  # timing writes nothing
