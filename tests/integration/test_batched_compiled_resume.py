"""The batched-compiled engine resumes a killed group to exactly the uninterrupted result (apart from
test_batched_compiled.py: each compiles for tens of seconds, and two files share the test workers; marked ``compiled``:
``pytest -m "not compiled"`` leaves them out)."""

import json
import os
import signal
import subprocess
import time

import pytest
import torch as th

from sb3_ablation import AblatableTD3
from sb3_ablation.study.run.batched import RunGroup, execute_group, group_checkpoints
from sb3_ablation.study.store.runs import model_path, read_run, run_path
from tests.integration import test_batched_resume as resume
from tests.integration.test_batched_compiled import ENGINE

pytestmark = pytest.mark.compiled


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
    assert resume.rerun_study(command) == 0  # (in this process: the worker it starts resumes)
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
