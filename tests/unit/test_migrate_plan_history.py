"""tools/migrate_plan_history.py: a committed manifest gets the history its plan had (reused runs with their record
digests, the equivalence test added after runs as an amendment), once, and the report reads it."""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from sb3_ablation.study.analyse.provenance import COPIED, REPRODUCED, record_digest, study_provenance
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.store.manifest import plan_versions, read_manifest
from sb3_ablation.study.store.runs import run_path, write_run

TOOL = Path(__file__).resolve().parents[2] / "tools" / "migrate_plan_history.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("migrate_plan_history", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_study(folder: Path, seeds, finished_at: str, plan: dict) -> None:
    folder.mkdir(parents=True)
    declared = {"at": "2026-11-25T07:01:10+0000", "finished_runs": 0}
    manifest = {"envs": ["Pendulum-v1"], "variants": ["td3"], "seeds": list(seeds), "analysis": plan,
                "analysis_declared": declared}  # fmt: skip
    (folder / "study.json").write_text(json.dumps(manifest))
    for seed in seeds:
        record = {
            "format": 3, "env": "Pendulum-v1", "variant": "td3", "seed": seed, "status": "ok", "engine": "batched",
            "evaluations": {"timesteps": [0, 100], "mean_return": [-1000.0, -200.0 - seed]},
            "finished_at": finished_at, "wall_time_s": 1.0 if finished_at < "2026-11-24" else 2.0,
        }  # fmt: skip
        write_run(run_path(folder, "Pendulum-v1", "td3", seed), record)


def test_the_manifest_gets_its_reused_runs_and_amendment_once(tool, tmp_path):
    plan = {**AnalysisPlan().to_dict(), "equivalence_test": "wilcoxon"}
    write_study(tmp_path / "pendulum-factorial", range(2), "2026-11-23T12:00:00+0000", AnalysisPlan().to_dict())
    write_study(tmp_path / "pendulum-2x6", range(3), "2026-11-25T07:30:00+0000", plan)
    # seed 2 has results of its own (the source has no seed 2)
    assert tool.migrate(tmp_path / "pendulum-2x6")
    manifest = read_manifest(tmp_path / "pendulum-2x6")
    (reused,) = manifest["reused"]
    assert reused["from"] == "docs/studies/pendulum-factorial" and reused["how"] == REPRODUCED
    assert reused["runs"] == [["Pendulum-v1", "td3", 0], ["Pendulum-v1", "td3", 1]]
    path = run_path(tmp_path / "pendulum-2x6", "Pendulum-v1", "td3", 0)
    assert reused["records"][0]["record_digest"] == record_digest(path) != reused["records"][0]["source_record_digest"]
    declared, amended = plan_versions(manifest)
    assert "equivalence_test" not in declared["analysis"] and amended["analysis"]["equivalence_test"] == "wilcoxon"
    assert amended["finished_runs"] == 3 and "b76c37b" in amended["reason"]
    assert manifest["amendments"][0]["changes"] == ["equivalence_test signflip -> wilcoxon"]
    assert "80 of its runs" in manifest["analysis_declared"]["note"] and manifest["analysis_declared"]["finished_runs"] == 0
    # the report's provenance reads the declared reuse without searching the source
    found = study_provenance(tmp_path / "pendulum-2x6", others=[])
    assert [(r.run[2], r.how, r.declared) for r in found.reused] == [(0, REPRODUCED, True), (1, REPRODUCED, True)]
    assert found.reused[0].digest == record_digest(path)
    # again: nothing changes
    before = (tmp_path / "pendulum-2x6" / "study.json").read_bytes()
    assert not tool.migrate(tmp_path / "pendulum-2x6")
    assert (tmp_path / "pendulum-2x6" / "study.json").read_bytes() == before


def test_a_copied_record_is_found_by_its_content_and_the_paper_studies_are_never_touched(tool, tmp_path):
    write_study(tmp_path / "hopper-factorial", range(2), "2026-11-23T12:00:00+0000", AnalysisPlan().to_dict())
    shutil.copytree(tmp_path / "hopper-factorial", tmp_path / "hopper-half-fraction")
    with pytest.raises(SystemExit, match="no run shared with multitask"):
        tool.migrate(tmp_path / "hopper-half-fraction")  # the second source of the committed study is missing here
    assert "reused" not in read_manifest(tmp_path / "hopper-half-fraction")  # nothing half-written
    runs = tool._shared_runs(tmp_path / "hopper-half-fraction", tmp_path / "hopper-factorial", COPIED)
    assert [r["record_digest"] == r["source_record_digest"] for r in runs] == [True, True]
    with pytest.raises(SystemExit, match="never touched"):
        tool.migrate(tmp_path / "hopper-paper-300k")
