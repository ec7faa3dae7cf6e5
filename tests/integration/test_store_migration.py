"""tools/migrate_studies.py: a study folder of earlier formats becomes one the store and the study read as their own."""

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from sb3_ablation.study.analyse.results import load_study
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.plan.records import RUN_FILE_FORMAT
from sb3_ablation.study.store.lock import LOCK_NAME, study_lock
from sb3_ablation.study.store.manifest import MANIFEST_NAME, planned_runs
from sb3_ablation.study.store.runs import iter_runs, read_run, record_paths, run_path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "migrate_studies.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("migrate_studies", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def settings(seed: int) -> dict:
    return {
        "env": "Pendulum-v1", "variant": "td3", "seed": seed, "algo": "ablatable_td3", "switches": {},
        "hyperparams": {"n_timesteps": 200}, "eval_freq": 100, "eval_episodes": 2,
    }  # fmt: skip


def format_2(seed: int) -> dict:
    """A record of format 2: the cut measure only, uncompressed, its model pruned since."""
    return {
        "format": 2, **settings(seed), "status": "ok", "error": None, "traceback": None, "engine": "batched",
        "group_size": 2, "n_timesteps": 200, "model": f"seed_{seed}.zip",
        "evaluations": {"timesteps": [0, 100, 200], "mean_return": [-1.0, -2.0, -3.0], "std_return": [0.0] * 3,
                        "mean_q": [1.0] * 3, "mean_discounted_return": [0.5] * 3, "bias": [0.5] * 3,
                        "episode_returns": [[-1.0, -1.0], [-2.0, -2.0], [-3.0, -3.0]]},
        "diagnostics": {"timesteps": [0, 100, 200], "q1_mean": [None, 1.0, 2.0]},
        "warnings": [], "wall_time_s": 1.0, "finished_at": "2026-01-01T00:00:00+0000",
    }  # fmt: skip


def format_3(seed: int) -> dict:
    """A record of format 3 with the cut measure beside the current one; its model kept."""
    record = format_2(seed)
    summary = {"steps": 428, "terminated": False, "states": 200, "q_sum": 2.0, "return_sum": 1.0, "abs_return_sum": 1.0}
    cut = {"cut_states": 200, "cut_q_sum": 2.0, "cut_return_sum": 0.5}
    evaluations = {**record["evaluations"], "overestimation": [0.005] * 3, "relative_overestimation": [1.0] * 3,
                   "value_states": [400] * 3}  # fmt: skip
    return {
        **{key: value for key, value in record.items() if key not in ("evaluations", "diagnostics")},
        "format": 3, "overestimation_method": {"name": "return past the time limit"}, "evaluations": evaluations,
        "value_episodes": [[{**summary, **cut}] * 2] * 3, "diagnostics": record["diagnostics"],
    }  # fmt: skip


@pytest.fixture
def old_folder(tmp_path):
    """A study folder as earlier versions left it: seed 0 of format 2 (.json), seed 1 of format 3 (.json.gz)."""
    folder = tmp_path / "study"
    record_0 = run_path(folder, "Pendulum-v1", "td3", 0).with_name("seed_0.json")
    record_0.parent.mkdir(parents=True)
    record_0.write_text(json.dumps(format_2(0)))
    run_path(folder, "Pendulum-v1", "td3", 1).write_bytes(gzip.compress(json.dumps(format_3(1)).encode()))
    (record_0.parent / "seed_1.zip").write_bytes(b"a kept model")
    old_plan = {"primary": "final_window", "alpha": 0.05, "margin_fraction": 0.05}
    manifest = {
        "format": 1, "settings": {"n_timesteps": 200, "run_format": 2, "engine": "batched"}, "hyperparams": {},
        "envs": ["Pendulum-v1"], "variants": ["td3"], "seeds": [0, 1, 2], "versions": {},
        "config": {"analysis": old_plan}, "analysis": old_plan,
    }  # fmt: skip
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest))
    return folder


def test_an_old_folder_is_converted_to_the_current_formats(tool, old_folder, capsys):
    assert [record["seed"] for record in iter_runs(old_folder)] == [1]  # the store does not read the .json record
    assert tool.main([str(old_folder)]) == 0
    out = capsys.readouterr().out
    assert "2 records (1 naming a model file not there (now null); 1 of format 2; 1 of format 3), 2 rewritten" in out
    assert "1 finished runs made before format 3 have no overestimation measure: left missing" in out
    assert record_paths(old_folder) == [run_path(old_folder, "Pendulum-v1", "td3", seed) for seed in (0, 1)]
    assert not list(old_folder.glob("runs/*/*/*.json"))

    old, new = (read_run(run_path(old_folder, "Pendulum-v1", "td3", seed)) for seed in (0, 1))
    for record in (old, new):
        assert record["format"] == RUN_FILE_FORMAT
        assert not {"mean_q", "mean_discounted_return", "bias"} & set(record["evaluations"])
        assert record["evaluations"]["mean_return"] == [-1.0, -2.0, -3.0]
    assert old["model"] is None and new["model"] == "seed_1.zip"  # the model file that is there is still named
    assert "overestimation" not in old["evaluations"] and "value_episodes" not in old  # left missing
    assert new["evaluations"]["overestimation"] == [0.005] * 3
    assert all(set(episode) == {"steps", "terminated", "states", "q_sum", "return_sum", "abs_return_sum"}
               for evaluation in new["value_episodes"] for episode in evaluation)  # fmt: skip
    # the entries in the order the current writer puts them
    assert list(new)[:15] == ["format", *settings(1), "status", "error", "traceback", "engine", "group_size", "n_timesteps"]

    manifest = json.loads((old_folder / MANIFEST_NAME).read_text())
    assert manifest["settings"] == {"n_timesteps": 200, "run_format": RUN_FILE_FORMAT}
    assert manifest["analysis"] == manifest["config"]["analysis"] == AnalysisPlan().to_dict()
    assert manifest["analysis_declared"]["finished_runs"] == 2
    assert manifest["analysis_declared"]["note"] == "declared after the runs by tools/migrate_studies.py"
    assert len(planned_runs(manifest)) == 3
    data = load_study(old_folder)
    assert [run.seed for run in data.runs["Pendulum-v1"]["td3"]] == [0, 1] and data.missing == [("Pendulum-v1", "td3", 2)]

    # a second pass changes nothing
    before = {path: path.read_bytes() for path in [*record_paths(old_folder), old_folder / MANIFEST_NAME]}
    assert tool.main([str(old_folder)]) == 0
    assert all(path.read_bytes() == content for path, content in before.items())


def test_a_folder_with_a_record_it_cannot_convert_keeps_its_manifest(tool, old_folder, capsys):
    format_1 = {**format_2(2), "format": 1}
    run_path(old_folder, "Pendulum-v1", "td3", 2).write_bytes(gzip.compress(json.dumps(format_1).encode()))
    manifest = (old_folder / MANIFEST_NAME).read_text()
    assert tool.main([str(old_folder)]) == 1
    assert "record format 1" in capsys.readouterr().out
    assert (old_folder / MANIFEST_NAME).read_text() == manifest


def test_a_folder_a_study_writes_into_is_skipped_and_one_folder_only_when_named(tool, old_folder, capsys):
    with study_lock(old_folder):
        holder = (old_folder / LOCK_NAME).read_text()
        assert tool.main([str(old_folder), "--dry-run"]) == tool.main([str(old_folder)]) == 0
    assert capsys.readouterr().out.count(f"skipped: a study ({holder}) is writing into it") == 2
    assert json.loads((old_folder / MANIFEST_NAME).read_text())["settings"]["run_format"] == 2
    assert tool.main([str(old_folder), "--dry-run"]) == 0
    assert not (old_folder / LOCK_NAME).exists()  # a study (and the tool) that ends removes its lock file
    assert "pendulum-2x6" not in [folder.name for folder in tool.default_folders()]
