"""A tuned study resumes from its Optuna storages: a variant tuned before an interruption keeps its trials, a trial the
interruption left running is failed and not counted, and an interrupted tuning chooses nothing. (Apart from
test_study_tuning.py, whose module-wide study is the long part of that file: two files share the test workers.)"""

import dataclasses
import math

import optuna
import pytest

from sb3_ablation.study.plan.config import StudyConfig, resolve_hyperparams
from sb3_ablation.study.plan.tuning import TuningPlan
from sb3_ablation.study.run.recording import library_versions
from sb3_ablation.study.run.tuning import (
    OPTUNA_STUDY,
    run_tuned_study,
    storage_path,
    trial_counts,
    tune,
    tune_variants,
    tuning_job,
)
from sb3_ablation.study.store.lock import study_lock
from sb3_ablation.study.store.manifest import open_manifest, read_manifest
from sb3_ablation.zoo.experiment import STUDY_AGGREGATE_ATTR, STUDY_TRIAL_SEEDS_ATTR
from sb3_ablation.zoo.export import optuna_storage
from tests.integration.test_study_tuning import ENV, SETTINGS, VARIANTS, worker_pool_in_this_process


@pytest.fixture
def workers_in_this_process():
    """Each tuning and each set of runs in this process (resuming is the point here, not worker processes, which
    test_study_tuning.py's study starts for its tunings)."""
    with worker_pool_in_this_process():
        yield


def test_resuming_a_study_interrupted_after_tuning_one_variant_keeps_its_trials(tmp_path, workers_in_this_process):
    config = StudyConfig(**{
        **{key: value for key, value in SETTINGS.items() if key != "env"},
        "envs": [ENV], "seeds": 1, "out": str(tmp_path / "out"), "progress": False, "verbose": 0,
        "workers": 1,  # (resuming is the point here, not workers side by side)
    })  # fmt: skip
    variants = config.variant_objects
    resolved = resolve_hyperparams(config, variants)
    # the first invocation: td3 tuned, then killed in the first trial of no_target_networks
    with study_lock(config.out):
        open_manifest(config, resolved, library_versions())
        assert tune_variants(config, variants[:1], resolved, log=lambda _: None) == []
    td3_trials = optuna.load_study(
        study_name=OPTUNA_STUDY, storage=optuna_storage(str(storage_path(config.out, ENV, "td3")), create=False)
    ).get_trials()
    assert [trial.state.name for trial in td3_trials] == ["COMPLETE", "COMPLETE"]
    killed = optuna.create_study(
        study_name=OPTUNA_STUDY, storage=optuna_storage(str(storage_path(config.out, ENV, "no_target_networks")))
    )
    killed.set_user_attr(STUDY_TRIAL_SEEDS_ATTR, 2)
    killed.set_user_attr(STUDY_AGGREGATE_ATTR, "mean")
    killed.ask()  # left running
    chosen_before = read_manifest(config.out)["tuned"][ENV]["td3"]

    result = run_tuned_study(config, log=lambda _: None)
    assert not result.failed and result.ok == 4  # 2 variants x 1 seed, with the study's and their own hyperparameters
    after = optuna.load_study(
        study_name=OPTUNA_STUDY, storage=optuna_storage(str(storage_path(config.out, ENV, "td3")), create=False)
    ).get_trials()
    assert [(t.number, t.state, t.params, t.value) for t in after] == [
        (t.number, t.state, t.params, t.value) for t in td3_trials
    ]
    assert read_manifest(config.out)["tuned"][ENV]["td3"] == chosen_before
    # the trial the kill left running is marked failed and not counted: the budget is two finished trials
    assert trial_counts(storage_path(config.out, ENV, "no_target_networks")) == {"fail": 1, "complete": 2}
    assert set(read_manifest(config.out)["tuned"][ENV]) == set(VARIANTS)
    # a third invocation tunes nothing and runs nothing
    again = run_tuned_study(config, log=lambda _: None)
    assert again.ok == 0 and again.skipped == 4
    assert trial_counts(storage_path(config.out, ENV, "td3")) == {"complete": 2}
    assert not math.isnan(read_manifest(config.out)["tuned"][ENV]["td3"]["value"])


def test_an_interrupted_tuning_chooses_nothing(tmp_path):
    # rl_zoo3's optimisation swallows Ctrl-C and reports the best trial so far: simulated by a tuning whose train
    # stops after one of its two trials; the tuning is reported as interrupted, and nothing is chosen from it
    config = StudyConfig(**{
        **{key: value for key, value in SETTINGS.items() if key != "env"},
        "envs": [ENV], "variants": ["td3"], "seeds": 2, "out": str(tmp_path / "out"), "progress": False, "verbose": 0,
        "workers": 1,  # (resuming is the point here, not workers side by side)
    })  # fmt: skip
    job = tuning_job(config, TuningPlan.from_dict(config.tuning), config.variant_objects[0], ENV)
    argv = list(job.argv)
    argv[argv.index("--max-total-trials") + 1] = "1"
    result = tune(dataclasses.replace(job, argv=tuple(argv)))
    assert result == {"env": ENV, "variant": "td3", "error": "interrupted after 1 of 2 trials; rerun the study to finish it"}
    assert trial_counts(storage_path(config.out, ENV, "td3")) == {"complete": 1}
