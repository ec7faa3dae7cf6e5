"""The ``sb3-ablation`` command (also ``python -m sb3_ablation``): one entry point, one sub-command per job."""

import importlib
import sys

# sub-command -> (module, function, one-line help); modules are imported lazily so `--help` stays fast
COMMANDS = {
    "train": ("sb3_ablation.zoo.train", "main", "train (or tune with -optimize) an agent, rl-zoo style"),
    "enjoy": ("sb3_ablation.zoo.enjoy", "main", "run a trained agent, rl-zoo style"),
    "record-video": ("sb3_ablation.zoo.record_video", "main", "record a video of a trained agent, rl-zoo style"),
    "export": ("sb3_ablation.zoo.export", "main", "export an Optuna study's best trial as a zoo YAML entry"),
    "study": ("sb3_ablation.study.cli", "study_main", "run an ablation study (variants x envs x seeds)"),
    "report": ("sb3_ablation.study.cli", "report_main", "write the statistical report of a study folder"),
    "demo": ("sb3_ablation.study.cli", "demo_main", "a small leave-one-out study on Pendulum-v1 plus its report"),
    "bench": ("sb3_ablation.benchmark.cli", "main", "training throughput against SB3's TD3/DDPG"),
}


def _usage() -> str:
    lines = ["usage: sb3-ablation <command> [options]", "", "commands:"]
    lines += [f"  {name:<8}{help_text}" for name, (_, _, help_text) in COMMANDS.items()]
    lines += ["", "`sb3-ablation <command> --help` lists the options of a command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"sb3-ablation: unknown command {command!r}; expected one of {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module_name, function_name, _ = COMMANDS[command]
    sys.argv = [f"sb3-ablation {command}", *rest]
    result = getattr(importlib.import_module(module_name), function_name)(rest)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
