"""What the study console says: counts with their plurals, an unreadable record redone, a resume, runs with warnings."""

import json
import shutil

from sb3_ablation.study.run.runner import run_study
from sb3_ablation.study.store.checkpoints import RunCheckpoints
from sb3_ablation.study.store.runs import model_path, read_run, run_path


def test_console_names_unreadable_records_resumes_and_warnings(tmp_path, tiny_study):
    config = tiny_study(tmp_path, variants=["td3"], seeds=1, workers=1)
    lines: list[str] = []
    result = run_study(config, log=lines.append)
    assert result.ok == 1 and not result.warned
    assert lines[0] == "1 run to do (0 of 1 already done) on 1 worker process"
    assert lines[1].startswith(f"1 run in {tmp_path}: 0 already done, 1 finished now")
    record = run_path(tmp_path, "Pendulum-v1", "td3", 0)

    # a truncated record, and a checkpoint of the run (here one whose state cannot be read): the record is said to be
    # unreadable and the run is done again, resumed from the checkpoint, which warns and starts over
    checkpoint = RunCheckpoints(record).folder / "step_100"
    checkpoint.mkdir(parents=True)
    shutil.copy(model_path(record), checkpoint / "model.zip")
    (checkpoint / "state.pkl").write_bytes(b"not a pickle")
    (checkpoint.parent / "latest.json").write_text(json.dumps({"folder": "step_100"}))
    record.write_bytes(record.read_bytes()[:50])
    lines.clear()
    again = run_study(config, log=lines.append)
    assert again.ok == 1 and again.warned == 1
    assert lines[0] == f"run record {record} is unreadable; the run is done again"
    assert lines[1] == "1 run to do (0 of 1 already done) on 1 worker process"
    assert lines[2] == "1 run will resume from its last checkpoint"
    assert "1 run raised warnings" in lines[-1]
    assert read_run(record)["status"] == "ok"
    assert any("not resumed" in warning for warning in read_run(record)["warnings"])
