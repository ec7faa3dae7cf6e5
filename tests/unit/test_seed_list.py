"""Parsed seeds are a SeedList: a config made again from its own fields (``dataclasses.replace``) keeps its seeds, a
single seed included, instead of reading one seed as a count."""

import dataclasses
import json

import pytest

from sb3_ablation.study.plan.config import SeedList, StudyConfig, StudyError, parse_seeds


def test_a_count_and_a_list_parse_to_a_seed_list():
    assert type(parse_seeds(3)) is SeedList and parse_seeds(3) == [0, 1, 2]
    assert type(parse_seeds([5, 2])) is SeedList and parse_seeds([5, 2]) == [2, 5]
    assert parse_seeds(SeedList([7])) == [7] and parse_seeds([7]) == [0, 1, 2, 3, 4, 5, 6]
    assert parse_seeds(parse_seeds(SeedList([7]))) == [7]  # parsed twice, one seed is still that seed
    assert json.dumps(parse_seeds(2)) == "[0, 1]"
    with pytest.raises(StudyError, match="given more than once"):
        parse_seeds([3, 3])


def test_a_replaced_config_keeps_its_one_seed(tmp_path):
    config = StudyConfig(envs=["Pendulum-v1"], variants=["td3"], seeds=SeedList([7]), out=str(tmp_path / "out"))
    assert dataclasses.replace(config, out=str(tmp_path / "other")).seeds == [7]
    counted = StudyConfig(envs=["Pendulum-v1"], variants=["td3"], seeds=1, out=str(tmp_path / "out"))
    assert counted.seeds == [0] and dataclasses.replace(counted).seeds == [0]
