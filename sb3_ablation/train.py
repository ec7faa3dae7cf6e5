"""``python -m sb3_ablation.train ...`` (rl-zoo's ``python -m rl_zoo3.train`` idiom) is ``sb3-ablation train ...``."""

import sys

from sb3_ablation.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
