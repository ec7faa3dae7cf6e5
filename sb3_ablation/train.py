"""``python -m sb3_ablation.train``: rl_zoo3's train with our algorithms (see :mod:`sb3_ablation.zoo.train`)."""

import sys

from sb3_ablation.zoo.train import main

if __name__ == "__main__":
    sys.exit(main())
