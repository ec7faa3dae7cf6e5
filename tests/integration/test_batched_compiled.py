"""The batched-compiled engine (BatchedTD3 with its update step compiled by torch.compile): its records are a function
of what they declare, as the eager engine's are. A run's record is the same alone, in a group of three, in a mixed
group, after a SIGKILL and resume, and on a second run; the group pays the compilation once and states it; a part that
does not compile stops the group with one line. Tiny networks and few steps: compiling is the cost (marked
``compiled``: ``pytest -m "not compiled"`` leaves them out)."""

import json
import os
import signal
import subprocess
import time

import pytest
import torch as th

from sb3_ablation import AblatableTD3
from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.digest import plan_digest
from sb3_ablation.study.run.batched import RunGroup, execute_group, group_checkpoints
from sb3_ablation.study.store.runs import model_path, read_run, run_path
from tests.integration import test_batched_invariance as invariance
from tests.integration import test_batched_resume as resume
from tests.integration.test_batched_invariance import assert_same_run

pytestmark = pytest.mark.compiled

ENGINE = "batched-compiled"
# test_batched_invariance's settings (every random stream of a run drawn from), with a tinier network
HYPERPARAMS = {**invariance.HYPERPARAMS, "policy_kwargs": "dict(net_arch=[8])", "batch_size": 16}
SETTINGS = {**invariance.SETTINGS, "hyperparams": HYPERPARAMS}


def _run(out, groups: list[tuple[str, list[int]]], engine: str = ENGINE) -> list[dict]:
    """Train, in one group of ``engine``, the runs of (variant, seeds) pairs."""
    tasks = []
    for variant, seeds in groups:
        config = StudyConfig(**SETTINGS, seeds=max(seeds) + 1, variants=[variant], out=str(out), engine=engine)
        config.keep_models = True
        variants = config.variant_objects
        by_seed = {task.seed: task for task in make_tasks(config, variants, resolve_hyperparams(config, variants))}
        for seed in seeds:
            by_seed[seed].record = str(run_path(out, "Pendulum-v1", variant, seed).resolve())
            tasks.append(by_seed[seed])
    records = execute_group(RunGroup("Pendulum-v1", "+".join(variant for variant, _ in groups), tasks))
    assert all(record["status"] == "ok" for record in records), [record.get("error") for record in records]
    return records


def test_a_compiled_runs_record_is_the_same_alone_in_a_group_in_a_mixed_group_and_on_a_rerun(tmp_path):
    th.set_num_threads(1)
    alone, again, grouped, mixed, eager = (tmp_path / name for name in ("alone", "again", "grouped", "mixed", "eager"))
    records = _run(alone, [("td3", [0])])
    _run(again, [("td3", [0])])
    _run(grouped, [("td3", [1, 2, 0])])  # seed 0 last in a group of three (a lone run trains beside its copy)
    # a mixed group (--group-size): other switches, a Gaussian actor and no delay beside it
    _run(mixed, [("no_clipped_double_q", [0]), ("td3", [0]), ("no_deterministic_policy+no_delayed_policy_update", [1])])
    for other in (again, grouped, mixed):
        assert_same_run(alone, other, "td3", 0)
    # each record states its engine and its group's compile time (each compiled part's first step)
    assert records[0]["engine"] == ENGINE and records[0]["compile_s"] > 0
    # (the compiled arithmetic is not the eager one: the engine is declared, not interchangeable)
    _run(eager, [("td3", [0])], engine="batched")
    eager_record, compiled_record = (read_run(run_path(folder, "Pendulum-v1", "td3", 0)) for folder in (eager, alone))
    assert eager_record["engine"] == "batched" and "compile_s" not in eager_record
    assert eager_record["evaluations"]["timesteps"] == compiled_record["evaluations"]["timesteps"]


def test_the_compiled_engine_is_a_setting_of_the_plan_and_its_digest(tmp_path):
    settings = {**SETTINGS, "seeds": 2, "variants": ["td3"], "out": str(tmp_path)}
    compiled, eager = StudyConfig(**settings, engine=ENGINE), StudyConfig(**settings, engine="batched")
    assert compiled.run_settings()["engine"] == ENGINE
    # a plan declared with the eager or process engine keeps its settings and digest (no engine key)
    assert "engine" not in eager.run_settings() and "engine" not in StudyConfig(**settings).run_settings()
    design = {"settings": compiled.run_settings(), "envs": compiled.envs, "variants": compiled.variants}
    eager_design = {"settings": eager.run_settings(), "envs": eager.envs, "variants": eager.variants}
    assert plan_digest(design, compiled.analysis) != plan_digest(eager_design, eager.analysis)


def test_a_part_that_does_not_compile_stops_the_group_in_one_line(tmp_path, monkeypatch):
    def uncompilable(function, **options):
        def compiling(*args, **kwargs):
            raise th._dynamo.exc.Unsupported("a step that cannot be traced\nits stack")

        return compiling

    monkeypatch.setattr(th, "compile", uncompilable)
    config = StudyConfig(**SETTINGS, seeds=1, variants=["td3"], out=str(tmp_path), engine=ENGINE)
    variants = config.variant_objects
    tasks = make_tasks(config, variants, resolve_hyperparams(config, variants))
    (record,) = execute_group(RunGroup("Pendulum-v1", "td3", tasks))
    assert record["status"] == "failed" and record["engine"] == ENGINE
    assert record["error"].startswith("CompileError: torch.compile failed on the critic part of the batched-compiled")
    assert "a step that cannot be traced" in record["error"] and "\n" not in record["error"]


def _resume_group(out) -> RunGroup:
    """test_batched_resume's group of td3, recording into ``out``, on the compiled engine."""
    group = resume._group(out, "td3")
    for task in group.runs:
        task.compile_update = True
    return group


def test_a_killed_compiled_group_resumes_to_exactly_the_uninterrupted_result(tmp_path):
    # test_batched_resume's settings (checkpoints mid-episode, Ornstein-Uhlenbeck noise), on the compiled engine
    th.set_num_threads(1)
    reference, out = tmp_path / "whole", tmp_path / "killed"
    group = _resume_group(reference)
    assert [record["status"] for record in execute_group(group)] == ["ok", "ok"]

    command = [ENGINE if part == "batched" else part for part in resume._study_command(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    driver = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checkpoints = group_checkpoints(_resume_group(out).runs)
    assert checkpoints is not None
    deadline = time.time() + 300  # (compiling first: slow on a loaded machine)
    while checkpoints.latest() is None and driver.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    pointer = json.loads(checkpoints.pointer.read_text())
    os.kill(pointer["pid"], signal.SIGKILL)  # the worker process, mid-group
    _, stderr = driver.communicate(timeout=300)
    assert driver.returncode == 1, stderr
    rerun = subprocess.run(command, env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    for seed in (0, 1):
        resumed, expected = (read_run(run_path(folder, "Pendulum-v1", "td3", seed)) for folder in (out, reference))
        assert resumed["resumed_from"] == pointer["timesteps"] and resumed["engine"] == ENGINE
        assert resumed["evaluations"]["timesteps"] == [0, 200, 400]
        assert resumed["evaluations"] == expected["evaluations"]
        assert resumed["diagnostics"] == expected["diagnostics"]
        state_a, state_b = (
            AblatableTD3.load(model_path(run_path(folder, "Pendulum-v1", "td3", seed))).policy.state_dict()
            for folder in (out, reference)
        )
        assert all(th.equal(state_a[key], state_b[key]) for key in state_a)
