"""Size and time of a study checkpoint, per engine: the whole preallocated replay buffer pickled (before) or its
filled rows only, compressed (now).

    OMP_NUM_THREADS=1 python benchmarks/checkpoint_size.py --seeds 10 --buffer-size 200000 --steps 2000

For each engine it builds the run (process engine) or the group of ``--seeds`` seeds (batched engine) of Pendulum-v1
as a study does, collects ``--steps`` steps per run, then writes a checkpoint both ways into a temporary folder:

- before: ``model.zip`` and SB3's ``save_replay_buffer`` (the buffer object pickled whole, every preallocated row);
- now: :meth:`~sb3_ablation.study.store.checkpoints.RunCheckpoints.save` (``model.zip`` and the filled rows,
  gzip-compressed);

and times reading the buffer back: SB3's ``load_replay_buffer`` (before) and
:func:`~sb3_ablation.study.store.checkpoints.restore_replay_buffer` into a fresh preallocated buffer (now), checking
that the restored buffer equals the saved one. The state of the run (``state.pkl``) is the same both ways and left
out. Prints a table (``--json`` also writes it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from sb3_ablation.common.buffers import empty_like
from sb3_ablation.study.plan.config import StudyConfig, make_tasks, resolve_hyperparams
from sb3_ablation.study.run.manager import make_manager
from sb3_ablation.study.store.checkpoints import REPLAY_BUFFER_FILE, RunCheckpoints, restore_replay_buffer

STORAGE = ("observations", "next_observations", "actions", "rewards", "dones", "timeouts")


def build(engine: str, seeds: int, buffer_size: int, net_arch: str, learning_starts: int | None) -> Any:
    """The model of one run (process) or of a group of ``seeds`` runs (batched), as a study builds it."""
    from stable_baselines3.common.utils import set_random_seed

    from sb3_ablation.batched import BatchedTD3

    config = StudyConfig(
        envs=["Pendulum-v1"], variants=["td3"], seeds=seeds if engine == "batched" else 1, out="unused",
        engine=engine, progress=False, n_timesteps=max(20_000, (learning_starts or 0) + 1),  # (the steps are learn()'s)
        hyperparams={
            "buffer_size": buffer_size, "policy_kwargs": f"dict(net_arch={net_arch})",
            **({"learning_starts": learning_starts} if learning_starts is not None else {}),
        },
    )  # fmt: skip
    variants = config.variant_objects
    models, managers = [], []
    for task in make_tasks(config, variants, resolve_hyperparams(config, variants)):
        set_random_seed(task.seed)
        manager = make_manager(task)
        models.append(manager.setup_experiment()[0])
        managers.append(manager)
    if engine == "process":
        return models[0]
    return BatchedTD3.from_agents(models, managers[0]._hyperparams)


def fresh_buffer(buffer: Any) -> Any:
    """An empty buffer of ``buffer``'s class and settings, as a model's constructor preallocates it."""
    return empty_like(buffer, type(buffer))


def same_buffer(a: Any, b: Any) -> bool:
    return (a.pos, a.full) == (b.pos, b.full) and all(np.array_equal(getattr(a, name), getattr(b, name)) for name in STORAGE)


def measure(engine: str, model: Any, folder: Path) -> dict[str, Any]:
    """Write and read a checkpoint of ``model`` both ways; sizes in bytes, times in seconds."""
    before, now = folder / "before", folder / "now"
    before.mkdir()
    started = time.perf_counter()
    model.save(before / "model.zip")
    model.save_replay_buffer(before / "replay_buffer.pkl")
    save_before = time.perf_counter() - started

    started = time.perf_counter()
    saved = RunCheckpoints(now / "seed_0.json.gz").save(model, "Pendulum-v1", state={})
    save_now = time.perf_counter() - started

    started = time.perf_counter()
    model.load_replay_buffer(before / "replay_buffer.pkl")
    load_before = time.perf_counter() - started
    fresh = fresh_buffer(model.replay_buffer)
    started = time.perf_counter()
    restore_replay_buffer(fresh, saved / REPLAY_BUFFER_FILE)
    load_now = time.perf_counter() - started
    assert same_buffer(fresh, model.replay_buffer), "the restored buffer differs from the saved one"

    def size(path: Path) -> int:
        return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())

    buffer = model.replay_buffer
    return {
        "engine": engine,
        "runs": buffer.n_envs if engine == "batched" else 1,
        "buffer_rows": buffer.buffer_size,
        "filled_rows": buffer.buffer_size if buffer.full else buffer.pos,
        "model_bytes": (before / "model.zip").stat().st_size,
        "buffer_bytes_before": (before / "replay_buffer.pkl").stat().st_size,
        "buffer_bytes_now": (saved / REPLAY_BUFFER_FILE).stat().st_size,
        "checkpoint_bytes_before": size(before),
        "checkpoint_bytes_now": size(saved) - (saved / "state.pkl").stat().st_size,
        "save_s_before": save_before,
        "save_s_now": save_now,
        "buffer_read_s_before": load_before,
        "buffer_read_s_now": load_now,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| engine | runs | buffer rows (filled) | checkpoint before | checkpoint now | of which buffer before / now "
        "| save before / now | buffer read before / now |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        mb = 1e6
        lines.append(
            f"| {row['engine']} | {row['runs']} | {row['buffer_rows']:,} ({row['filled_rows']:,}) "
            f"| {row['checkpoint_bytes_before'] / mb:,.1f} MB | {row['checkpoint_bytes_now'] / mb:,.2f} MB "
            f"| {row['buffer_bytes_before'] / mb:,.1f} MB / {row['buffer_bytes_now'] / mb:,.2f} MB "
            f"| {row['save_s_before']:.2f} s / {row['save_s_now']:.2f} s "
            f"| {row['buffer_read_s_before']:.2f} s / {row['buffer_read_s_now']:.3f} s |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", nargs="+", default=["process", "batched"], choices=["process", "batched"])
    parser.add_argument("--seeds", type=int, default=10, help="runs of the batched group")
    parser.add_argument("--buffer-size", type=int, default=200_000, help="replay buffer of each run")
    parser.add_argument("--steps", type=int, default=2_000, help="steps of each run before the checkpoint")
    parser.add_argument("--net-arch", default="[64, 64]", help="as the committed Pendulum studies")
    parser.add_argument("--learning-starts", type=int, help="default: the zoo's (10,000: no training before)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    rows = []
    for engine in args.engines:
        with contextlib.redirect_stdout(io.StringIO()):  # (rl_zoo3's experiment prints its hyperparameters)
            model = build(engine, args.seeds, args.buffer_size, args.net_arch, args.learning_starts)
        model.learn(args.steps)  # (per agent for the batched group)
        with tempfile.TemporaryDirectory() as folder:
            rows.append(measure(engine, model, Path(folder)))
        model.get_env().close()
    print(f"Pendulum-v1, buffer {args.buffer_size:,} per run, checkpoint after {args.steps:,} steps per run\n")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
