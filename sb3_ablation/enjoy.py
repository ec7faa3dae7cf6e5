"""``python -m sb3_ablation.enjoy ...`` (rl-zoo's ``python -m rl_zoo3.enjoy`` idiom) is ``sb3-ablation enjoy ...``."""

import sys

from sb3_ablation.cli import main

if __name__ == "__main__":
    sys.exit(main(["enjoy", *sys.argv[1:]]))
