"""Budget independence: a run's evaluations up to step t do not depend on its total budget, on either engine, so the
window of an earlier budget of a long run (``analysis.earlier_budgets``) is that of a run trained to that budget."""

import pytest
import torch as th

from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.run.batched import RunGroup, execute_group
from sb3_ablation.study.run.execute import execute_run
from sb3_ablation.study.store.runs import read_run, run_path

# exploration noise, a warm-up of random actions, smoothing and the delayed actor: every random stream is drawn from
HYPERPARAMS = {
    "learning_starts": 25,
    "policy_kwargs": "dict(net_arch=[16, 16])",
    "batch_size": 16,
    "noise_type": "normal",
    "noise_std": 0.1,
}
SHORT, LONG, EVAL_FREQ = 100, 200, 50


def _records(out, budget: int, engine: str, variants: list[str]) -> dict[str, dict]:
    config = StudyConfig(
        envs=["Pendulum-v1"], variants=variants, seeds=[3], out=str(out), n_timesteps=budget, eval_freq=EVAL_FREQ,
        eval_episodes=2, eval_max_episode_steps=20, hyperparams=HYPERPARAMS, engine=engine,
    )  # fmt: skip
    objects = config.variant_objects
    tasks = make_tasks(config, objects, resolve_hyperparams(config, objects))
    for task in tasks:
        task.record = str(run_path(out, task.env, task.variant, task.seed).resolve())
    if engine == "batched":
        execute_group(RunGroup("Pendulum-v1", "+".join(variants), tasks))
    else:
        for task in tasks:
            execute_run(task)
    records = {task.variant: read_run(run_path(out, task.env, task.variant, task.seed)) for task in tasks}
    assert all(record["status"] == "ok" for record in records.values()), records
    return records


@pytest.mark.parametrize("engine", ["batched", "process"])
def test_evaluations_up_to_a_step_do_not_depend_on_the_budget(tmp_path, engine):
    th.set_num_threads(1)
    variants = ["td3", "no_delayed_policy_update"]
    short = _records(tmp_path / "short", SHORT, engine, variants)
    long = _records(tmp_path / "long", LONG, engine, variants)
    for variant in variants:
        evaluations_short, evaluations_long = short[variant]["evaluations"], long[variant]["evaluations"]
        assert evaluations_short["timesteps"] == [0, 50, 100]
        assert evaluations_long["timesteps"] == [0, 50, 100, 150, 200]
        # every entry of the evaluations (returns of each episode, overestimation), bit for bit
        for key, values in evaluations_short.items():
            assert values == evaluations_long[key][: len(values)], (variant, key)
        assert short[variant]["value_episodes"] == long[variant]["value_episodes"][:3]
        diagnostics_short, diagnostics_long = short[variant]["diagnostics"], long[variant]["diagnostics"]
        for key, values in diagnostics_short.items():
            assert values == diagnostics_long[key][: len(values)], (variant, key)
        # the longer run goes on learning (the comparison is not of two frozen runs)
        assert evaluations_long["mean_return"][3:] != evaluations_long["mean_return"][1:3]


@pytest.mark.parametrize(
    ("hypothesis", "message"),
    [
        ({"budget": 150, "variant": "no_clipped_double_q"}, "not one the study compares"),
        ({"budget": 150, "variant": "td3"}, "not one the study compares"),
        ({"budget": 400, "variant": "no_delayed_policy_update"}, "below the study's n_timesteps"),
        ({"budget": 150, "variant": "no_delayed_policy_update"}, "multiple of eval_freq"),
    ],
)
def test_an_earlier_budget_the_study_cannot_test_is_refused_in_one_line(tmp_path, hypothesis, message):
    from sb3_ablation.study.plan.config import StudyError

    with pytest.raises(StudyError, match=message) as error:
        StudyConfig(
            envs=["Pendulum-v1"], variants=["td3", "no_delayed_policy_update"], seeds=2, out=str(tmp_path),
            n_timesteps=400, eval_freq=100, analysis={"earlier_budgets": [hypothesis]},
        )  # fmt: skip
    assert "\n" not in str(error.value)
