"""The IQM below the study (sb3_ablation/common/aggregates.py), used by the zoo's multi-seed trials: the study's own
IQM, bit for bit."""

import numpy as np

from sb3_ablation.common.aggregates import iqm
from sb3_ablation.study.analyse import statistics
from sb3_ablation.zoo.trials import AGGREGATES


def test_the_iqm_cuts_a_quarter_from_each_end():
    assert iqm(np.array([100.0, 2.0, 3.0, -50.0])) == 2.5
    assert iqm(np.array([1.0, 2.0, 4.0])) == 7.0 / 3.0  # fewer than 4 values: the mean
    assert AGGREGATES["iqm"]([100.0, 2.0, 3.0, -50.0]) == 2.5


def test_the_iqm_is_the_studys_bit_for_bit():
    rng = np.random.default_rng(0)
    for size in range(1, 40):
        scores = rng.normal(size=size) * rng.choice([1.0, 1e3, 1e6])
        assert iqm(scores) == statistics.iqm(scores)
