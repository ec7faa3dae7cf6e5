"""Run records: one file format (gzip of compact JSON), one record format, read and listed by the store only."""

import gzip
import json

from sb3_ablation.study.plan.records import RUN_FILE_FORMAT
from sb3_ablation.study.store.runs import (
    model_path,
    read_run,
    record_paths,
    run_path,
    unreadable_runs,
    write_run,
)


def test_a_record_is_compressed_compact_json_with_null_for_non_finite_values(tmp_path):
    path = run_path(tmp_path, "module:Env-v0", "td3", 3)
    assert path == tmp_path / "runs" / "module_Env-v0" / "td3" / "seed_3.json.gz"
    assert model_path(path) == path.with_name("seed_3.zip")
    record = {"format": RUN_FILE_FORMAT, "seed": 3, "evaluations": {"overestimation": [1.5, float("nan")]}}
    write_run(path, record)
    text = gzip.decompress(path.read_bytes()).decode()
    assert text == '{"format":3,"seed":3,"evaluations":{"overestimation":[1.5,null]}}'
    assert read_run(path) == {**record, "evaluations": {"overestimation": [1.5, None]}}
    first = path.read_bytes()
    write_run(path, record)
    assert path.read_bytes() == first  # the same record, the same bytes


def test_records_of_another_format_or_corrupt_are_not_read_and_are_named(tmp_path):
    current, old, corrupt = (run_path(tmp_path, "Pendulum-v1", "td3", seed) for seed in (0, 1, 2))
    write_run(current, {"format": RUN_FILE_FORMAT, "status": "ok"})
    write_run(old, {"format": 2, "status": "ok"})
    corrupt.write_bytes(current.read_bytes()[:20])
    (current.parent / "seed_0.zip").write_bytes(b"a model")  # not a record
    assert record_paths(tmp_path) == [current, old, corrupt]
    assert read_run(current) == {"format": RUN_FILE_FORMAT, "status": "ok"}
    assert read_run(old) is None and read_run(corrupt) is None and read_run(tmp_path / "missing.json.gz") is None
    entries = {entry["seed"]: entry["error"] for entry in unreadable_runs(tmp_path, ["Pendulum-v1"], ["td3"])}
    assert set(entries) == {1, 2}
    assert "record format 2, not 3: tools/migrate_studies.py of the repository's history converts it" in entries[1]
    assert "corrupt or truncated" in entries[2]
    json.loads(gzip.decompress(old.read_bytes()))  # left as it was
