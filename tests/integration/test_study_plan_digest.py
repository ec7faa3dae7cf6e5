"""Every record a study writes carries the digest of its plan in force, with either engine; a plan edited after the
runs is refused unless amended, and the runs after an amendment carry its digest."""

import pytest

from sb3_ablation.study.analyse.provenance import EARLIER_VERSION, UNDER_PLAN, study_provenance
from sb3_ablation.study.plan.config import StudyError
from sb3_ablation.study.run.runner import run_study
from sb3_ablation.study.store.manifest import plan_versions, read_manifest
from sb3_ablation.study.store.runs import iter_runs


@pytest.mark.parametrize("engine", ["process", "batched"])
def test_records_carry_the_plan_digest_and_an_amendment_changes_it(tmp_path, tiny_study, engine):
    settings = dict(variants=["td3"], engine=engine, keep_models=False, workers=1)
    assert run_study(tiny_study(tmp_path, seeds=1, **settings)).ok == 1
    declared = read_manifest(tmp_path)["analysis_declared"]["digest"]
    assert [record["plan_digest"] for record in iter_runs(tmp_path)] == [declared]

    with pytest.raises(StudyError, match="this plan differs from it"):
        run_study(tiny_study(tmp_path, seeds=[0, 1], analysis={"alpha": 0.1}, **settings))
    amended = tiny_study(tmp_path, seeds=[0, 1], analysis={"alpha": 0.1}, amend_plan="more seeds", **settings)
    assert run_study(amended).ok == 1
    versions = plan_versions(read_manifest(tmp_path))
    assert [v["reason"] for v in versions] == [None, "more seeds"] and versions[0]["digest"] == declared
    provenance = study_provenance(tmp_path, others=[])
    assert provenance.verified
    assert {r.run[2]: r.status for r in provenance.records} == {0: EARLIER_VERSION, 1: UNDER_PLAN}
