"""``python -m sb3_ablation.zoo.record_video``: rl_zoo3's ``record_video`` script with our algorithms registered.

Same flags as ``python -m rl_zoo3.record_video`` (``--algo``, ``--env``, ``-f``, ``-o``, ``-n``, ``--exp-id``, ...);
it needs ``moviepy`` and an environment that renders ``rgb_array`` frames.
"""

from __future__ import annotations

import sys

from sb3_ablation.zoo.enjoy import run_trained_model_command
from sb3_ablation.zoo.hyperparams import ZooConfigError

PROG = "sb3-ablation record-video"


def main(argv: list[str] | None = None) -> int:
    """
    :param argv: rl_zoo3 ``record_video`` arguments; ``sys.argv[1:]`` by default
    :return: exit status (0: done, 2: bad input)
    """

    def check_moviepy() -> None:
        # moviepy is optional: checked here, as SB3's VecVideoRecorder would fail only at the first frame (a traceback)
        try:
            import moviepy  # noqa: F401
        except ImportError:
            raise ZooConfigError("record-video needs moviepy, which is not installed: pip install moviepy") from None

    return run_trained_model_command(PROG, "record_video", sys.argv[1:] if argv is None else list(argv), check=check_moviepy)


if __name__ == "__main__":
    sys.exit(main())
