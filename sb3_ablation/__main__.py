import sys

from sb3_ablation.cli import main

sys.exit(main())
