"""A study whose runs would train nothing, or never be evaluated, is refused before anything is written."""

import pytest

from sb3_ablation.cli.study import study_main


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-n", "10000"], "Pendulum-v1 (ablatable_td3): n_timesteps 10,000 is at or below learning_starts 10,000, so no run"),
        (["-n", "300", "--hyperparams", "learning_starts:100", "--eval-freq", "500"],
         "Pendulum-v1: --eval-freq 500 is beyond the budget of 300 steps"),
    ],
)  # fmt: skip
def test_a_study_that_would_train_or_evaluate_nothing_is_refused_before_writing(tmp_path, capsys, flags, message):
    out = tmp_path / "study"
    assert (
        study_main(["--env", "Pendulum-v1", "--variants", "td3", "--seeds", "1", "--no-progress", "-f", str(out), *flags]) == 2
    )
    error = capsys.readouterr().err.strip()
    assert error.startswith("sb3-ablation study: ") and message in error and "\n" not in error
    assert not out.exists()
