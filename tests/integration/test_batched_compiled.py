"""The batched-compiled engine (BatchedTD3 with its update step compiled by torch.compile): its records are a function
of what they declare, as the eager engine's are. A run's record is the same alone, last in a mixed group of three,
after a SIGKILL and resume, and on a second run; the group pays the compilation once and states it; a part that
does not compile stops the group with one line (the kill and resume: test_batched_compiled_resume.py, a file of its own
so that the two test workers share the compiling). Tiny networks and few steps: compiling is the cost (marked
``compiled``: ``pytest -m "not compiled"`` leaves them out)."""

import pytest
import torch as th

from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.digest import plan_digest
from sb3_ablation.study.run.batched import RunGroup, execute_group
from sb3_ablation.study.store.runs import read_run, run_path
from tests.integration import test_batched_invariance as invariance
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
    alone, again, mixed, eager = (tmp_path / name for name in ("alone", "again", "mixed", "eager"))
    records = _run(alone, [("td3", [0])])  # (a lone run trains beside its copy: a group of two)
    _run(again, [("td3", [0])])
    # seed 0 last in a group of three that is also a mixed group (--group-size): other switches, a Gaussian actor and
    # no delay beside it. (One group for both claims, where there were two: a compiled group costs tens of seconds of
    # compiling on a fresh machine; the unmixed compiled step is the lone run's, a group of two.)
    _run(mixed, [("no_clipped_double_q", [0]), ("no_deterministic_policy+no_delayed_policy_update", [1]), ("td3", [0])])
    for other in (again, mixed):
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
