"""Training throughput against SB3's TD3 and DDPG: the same as ``sb3-ablation bench`` (see ``--help``).

Run it on an otherwise idle machine, e.g. ``OMP_NUM_THREADS=1 python benchmarks/throughput.py --json bench.json``.
"""

import os
import sys

# runnable from a checkout without installing the package
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sb3_ablation.bench.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
