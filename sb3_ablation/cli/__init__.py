"""The ``sb3-ablation`` command (also ``python -m sb3_ablation``): one entry point, one sub-command per job."""

import contextlib
import errno
import importlib
import os
import sys
import threading
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from pathlib import Path

from sb3_ablation import __version__

# re-exported: the commands' parser, defined below the zoo and the benchmark, which use it too
from sb3_ablation.common.arguments import OneLineArgumentParser as OneLineArgumentParser

# sub-command -> (module, function, one-line help); modules are imported lazily so `--help` stays fast
COMMANDS = {
    "train": ("sb3_ablation.zoo.train", "main", "train (or tune with -optimize) an agent, rl-zoo style"),
    "enjoy": ("sb3_ablation.zoo.enjoy", "main", "run a trained agent, rl-zoo style"),
    "record-video": ("sb3_ablation.zoo.record_video", "main", "record a video of a trained agent, rl-zoo style (mp4)"),
    "export": ("sb3_ablation.zoo.export", "main", "export an Optuna study's best trial as a zoo YAML entry"),
    "study": ("sb3_ablation.cli.study", "study_main", "run an ablation study (variants x envs x seeds)"),
    "report": ("sb3_ablation.cli.study", "report_main", "write the statistical report of a study folder"),
    "demo": ("sb3_ablation.cli.study", "demo_main", "a small leave-one-out study on Pendulum-v1 plus its report"),
    "bench": ("sb3_ablation.bench.cli", "main", "training throughput against SB3's TD3/DDPG"),
}
# commands whose usage errors carry argparse's "error: " prefix (the zoo's parsers); the study's say it without
ZOO_COMMANDS = ("train", "enjoy", "record-video", "export")


def _usage() -> str:
    width = max(map(len, COMMANDS)) + 2
    lines = ["usage: sb3-ablation <command> [options]", "       sb3-ablation --version", "", "commands:"]
    lines += [f"  {name:<{width}}{help_text}" for name, (_, _, help_text) in COMMANDS.items()]
    lines += ["", "`sb3-ablation <command> --help` lists the options of a command."]
    return "\n".join(lines)


def version() -> str:
    """The installed distribution's version (the package's own ``__version__`` when run from a source tree)."""
    try:
        return distribution_version("sb3-ablation")
    except PackageNotFoundError:
        return __version__


@contextlib.contextmanager
def without_stderr_lines(prefix: bytes) -> Iterator[None]:
    """
    Drop the lines starting with ``prefix`` that anything in this process (C++ included) writes to file descriptor 2;
    the other lines pass through unchanged, as they come.
    """
    end = b"\0sb3-ablation: end of stderr filter\0"
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    saved = os.dup(2)
    os.dup2(write_end, 2)

    def pump() -> None:
        pending = b""
        while chunk := os.read(read_end, 65536):
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                if line.endswith(end):  # a library may hold a copy of fd 2, so the pipe never ends by itself
                    os.write(saved, line.removesuffix(end))
                    return
                if not line.startswith(prefix):
                    os.write(saved, line + b"\n")

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.write(write_end, end + b"\n")
        thread.join()
        for fd in (write_end, read_end, saved):
            os.close(fd)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] in ("-V", "--version"):
        print(f"sb3-ablation {version()}")
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"sb3-ablation: unknown command {command!r}; expected one of {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module_name, function_name, _ = COMMANDS[command]
    # torch's profiler (Kineto) writes a "USDT: ... profiler_start/stop" line to stderr around every profiled step
    quiet = without_stderr_lines(b"USDT:") if command == "bench" else contextlib.nullcontext()
    try:
        with quiet:
            result = getattr(importlib.import_module(module_name), function_name)(rest)
    except OSError as error:
        if error.errno not in UNUSABLE_PATH_ERRORS or error.filename is None:
            raise
        # e.g. a report into a study folder that cannot be written: one line, whatever step met it
        error_prefix = "error: " if command in ZOO_COMMANDS else ""
        print(f"sb3-ablation {command}: {error_prefix}{describe_path_error(error)}", file=sys.stderr)
        return 2
    return int(result or 0)


#: what a file or folder the command must write (or read) can refuse: no permission, a read-only file system, a full
#: disk or quota; ``main`` reports these in one line (exit status 2) instead of a traceback
UNUSABLE_PATH_ERRORS = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT)


def describe_path_error(error: OSError) -> str:
    """
    :param error: an ``OSError`` with a file name
    :return: e.g. ``runs/study/report.md: Permission denied``; an atomic write's hidden temporary file
        (``.<name>.<random>.tmp...``) is named by its folder: ``cannot write into runs/study/figures: ...``
    """
    path = Path(os.fsdecode(error.filename))
    reason = error.strerror or type(error).__name__
    if path.name.startswith(".") and ".tmp" in path.name:
        return f"cannot write into {path.parent}: {reason}"
    return f"{path}: {reason}"


if __name__ == "__main__":
    sys.exit(main())
