"""The command lines' argument parser, below every command (``sb3_ablation.cli``, the zoo's and the benchmark's)."""

import argparse
from typing import NoReturn


class OneLineArgumentParser(argparse.ArgumentParser):
    """``ArgumentParser`` whose usage errors are one line (``prog: error: message (see --help)``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")
