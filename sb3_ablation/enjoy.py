"""``python -m sb3_ablation.enjoy``: rl_zoo3's enjoy with our algorithms (see :mod:`sb3_ablation.zoo.enjoy`)."""

import sys

from sb3_ablation.zoo.enjoy import main

if __name__ == "__main__":
    sys.exit(main())
