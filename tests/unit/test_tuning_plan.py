"""The ``tuning:`` section of a study: validated with one-line errors naming the key, and what each variant searches."""

import numpy as np
import optuna
import pytest

from sb3_ablation.study.plan.config import StudyConfig, StudyError, load_config_file, make_tasks, resolve_hyperparams
from sb3_ablation.study.plan.tuning import TuningError, TuningPlan
from sb3_ablation.study.plan.variants import parse_variant

TUNING = {
    "n_trials": 30,
    "seeds": [1000, 1001, 1002],
    "aggregate": "mean",
    "sampler": "tpe",
    "pruner": "median",
    "search_space": {
        "learning_rate": {"low": 1.0e-4, "high": 3.0e-3, "log": True},
        "tau": {"low": 0.001, "high": 0.05, "log": True},
        "batch_size": {"choices": [64, 128, 256]},
        "noise_std": {"low": 0.05, "high": 0.5},
    },
}


def config(tmp_path, **changes) -> StudyConfig:
    settings = {"envs": ["Pendulum-v1"], "variants": ["leave-one-out"], "seeds": 3, "out": str(tmp_path / "out")}
    return StudyConfig(**{**settings, "tuning": TUNING, **changes})


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def test_the_issues_example_reads_and_round_trips():
    plan = TuningPlan.from_dict(TUNING)
    assert plan.n_trials == 30 and plan.seeds == (1000, 1001, 1002) and plan.n_evaluations == 10
    assert TuningPlan.from_dict(plan.to_dict()) == plan
    assert plan.to_dict()["search_space"]["learning_rate"] == {"low": 1.0e-4, "high": 3.0e-3, "log": True}


def test_tuning_seeds_and_confirmatory_seeds_never_overlap(tmp_path):
    with pytest.raises(StudyError) as error:
        config(tmp_path, seeds=[0, 1, 1001])
    assert one_line(error) == ("tuning.seeds and seeds overlap (1001): the confirmatory runs need seeds that tuning never saw")
    assert config(tmp_path, seeds=[0, 1, 999]).tuning["seeds"] == [1000, 1001, 1002]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"n_trails": 3}, "unknown key 'n_trails' (did you mean 'n_trials'?) in tuning"),
        ({"seeds": [1000, 1002]}, "tuning.seeds must be consecutive"),
        ({"seeds": 3}, "tuning.seeds must be a list of non-negative integers"),
        ({"n_trials": 0}, "tuning.n_trials must be a positive integer, got 0"),
        ({"aggregate": "sum"}, "tuning.aggregate 'sum' is not one of mean, iqm"),
        ({"sampler": "tpr"}, "tuning.sampler 'tpr' (did you mean 'tpe'?) is not one of tpe, random"),
        ({"search_space": {}}, "tuning.search_space must name at least one hyperparameter"),
        ({"search_space": {"learning_rat": {"low": 1e-4, "high": 1e-3}}}, "(did you mean 'learning_rate'?)"),
        ({"search_space": {"target_networks": {"choices": [True, False]}}}, "the component switches are the variants'"),
        ({"search_space": {"tau": {"low": 0.05, "high": 0.01}}}, "tuning.search_space.tau: low (0.05) must be below"),
        ({"search_space": {"tau": {"low": 0, "high": 0.01, "log": True}}}, "a log range needs low > 0"),
        ({"search_space": {"tau": {"lo": 0.01, "high": 0.1}}}, "unknown key 'lo' (did you mean 'low'?)"),
        ({"search_space": {"batch_size": {"low": 32.5, "high": 256}}}, "batch_size is an integer"),
        ({"search_space": {"batch_size": {"choices": []}}}, "tuning.search_space.batch_size.choices must be a non-empty"),
        ({"search_space": {"tau": {"low": 0.01, "high": 0.1, "log": True, "step": 0.01}}}, "step and log cannot go"),
    ],
)
def test_a_bad_tuning_section_is_one_line_naming_the_key(tmp_path, change, message):
    with pytest.raises(StudyError) as error:
        config(tmp_path, tuning={**TUNING, **change})
    assert message in one_line(error)


def test_tuning_needs_td3_and_ablatable_variants_and_no_sequential_looks(tmp_path):
    with pytest.raises(StudyError, match="add td3 to variants"):
        config(tmp_path, variants=["no_target_networks", "no_replay_buffer"])
    with pytest.raises(StudyError, match="remove ref_sb3_td3"):
        config(tmp_path, variants=["td3", "ref_sb3_td3"])
    with pytest.raises(StudyError, match=r"analysis\.looks"):
        config(tmp_path, seeds=10, analysis={"looks": [5, 10]})


def test_a_study_file_takes_a_tuning_section_and_names_a_misspelt_one(tmp_path):
    import yaml

    path = tmp_path / "study.yml"
    path.write_text(yaml.safe_dump({"env": ["Pendulum-v1"], "variants": ["td3"], "seed_list": [0, 1], "tuning": TUNING}))
    assert StudyConfig(**load_config_file(path), out=str(tmp_path / "out")).tuning["n_trials"] == 30
    path.write_text(yaml.safe_dump({"env": ["Pendulum-v1"], "tunning": TUNING}))
    with pytest.raises(StudyError, match="'tunning' \\(did you mean 'tuning'\\?\\)"):
        load_config_file(path)


def test_each_variant_searches_the_declared_hyperparameters_it_uses():
    plan = TuningPlan.from_dict(TUNING)
    assert list(plan.space_for(parse_variant("td3").switches)) == ["learning_rate", "tau", "batch_size", "noise_std"]
    # no target networks: tau unused; no replay buffer: batch_size unused; the Gaussian actor's initial std is noise_std
    assert "tau" not in plan.space_for(parse_variant("no_target_networks").switches)
    assert "batch_size" not in plan.space_for(parse_variant("no_replay_buffer").switches)
    assert "noise_std" in plan.space_for(parse_variant("no_deterministic_policy").switches)


def test_the_declared_sampler_samples_the_space_and_noise_std_is_rl_zoos_normal_noise():
    from sb3_ablation.zoo.hyperparams_opt import convert_ablation_params, sample_declared_params

    space = TuningPlan.from_dict(TUNING).search_space
    trial = optuna.trial.FixedTrial({"learning_rate": 1e-3, "tau": 0.01, "batch_size": 128, "noise_std": 0.2})
    sampled = sample_declared_params(trial, 2, 1, {}, space=space)
    assert sampled["learning_rate"] == 1e-3 and sampled["batch_size"] == 128 and "noise_std" not in sampled
    assert np.array_equal(sampled["action_noise"]._sigma, [0.2, 0.2])
    assert np.array_equal(sampled["action_noise"]._mu, [0.0, 0.0])
    # the zoo's converter (export, and the study's chosen values) reads a declared-space trial as zoo hyperparameters
    assert convert_ablation_params(trial.params) == {
        "learning_rate": 1e-3,
        "tau": 0.01,
        "batch_size": 128,
        "noise_std": 0.2,
        "noise_type": "normal",
    }


def test_a_variants_own_hyperparameters_reach_its_tasks_only(tmp_path):
    own = {"no_target_networks": {"Pendulum-v1": {"learning_rate": 0.0004, "batch_size": 64}}}
    study = config(tmp_path, tuning={}, variants=["td3", "no_target_networks"], variant_hyperparams=own)
    tasks = make_tasks(study, study.variant_objects, resolve_hyperparams(study, study.variant_objects))
    by_variant = {task.variant: task.hyperparams for task in tasks}
    assert by_variant["no_target_networks"]["learning_rate"] == 0.0004
    assert by_variant["no_target_networks"]["batch_size"] == 64 and not by_variant["no_target_networks"]["target_networks"]
    assert by_variant["td3"]["learning_rate"] == 1e-3
    assert study.run_settings()["variant_hyperparams"] == own
    with pytest.raises(StudyError, match="not in the study: no_replay_buffer"):
        config(tmp_path, tuning={}, variants=["td3"], variant_hyperparams={"no_replay_buffer": {"Pendulum-v1": {}}})
    bad = {"td3": {"Pendulum-v1": {"learning_rat": 0.1}}}
    study = config(tmp_path, tuning={}, variants=["td3"], variant_hyperparams=bad)
    with pytest.raises(StudyError, match="variant_hyperparams of td3 on Pendulum-v1") as error:
        resolve_hyperparams(study, study.variant_objects)
    one_line(error)


def test_tuning_errors_are_value_errors_naming_tuning():
    with pytest.raises(TuningError, match=r"^tuning needs search_space$"):
        TuningPlan.from_dict({"n_trials": 2, "seeds": [5, 6]})
