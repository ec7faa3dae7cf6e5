"""Where the batched engine's products round differently, and by how much: the facts behind its grouping rules.

    OMP_NUM_THREADS=1 python benchmarks/product_rounding.py --json benchmarks/results/product_rounding_cpu.json

For each layer shape of a TD3 network (inputs, outputs) and each number of agents K, it compares, on random weights
and inputs, agent k's rows of one batched product (``baddbmm``, agents first, as ``AgentLinear`` computes a layer)
with the same rows computed otherwise, and counts the shapes where they are not bit-identical:

- ``rows``: a one-row product against the first row of a ``--batch``-row product (forward, and the backward's input
  gradient with the other rows' output gradients zero). A run without a replay buffer learns from batches of one,
  a run with one from batches of ``--batch``: if a no-buffer agent were padded to the group's batch, its first row
  would have to equal its single-row product. Where it does not, ``replay_buffer`` cannot mix exactly.
- ``agents``: a group of K agents against a group of 2 holding the same agent (``AgentLinear`` runs one agent alone
  as a batch of two, so 2 is the smallest group).
- ``plain``: the batched product against a plain ``addmm`` of one agent (``nn.Linear``, the process engine's layer).

Each comparison reports the shapes tried, the shapes that differ and the largest absolute difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch as th

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout without installing

from sb3_ablation.bench.measure import cpu_model_name

#: (inputs, outputs) of the layers of TD3 networks on the committed tasks: Pendulum (3 observations, 1 action),
#: Hopper (11, 3), HalfCheetah (17, 6), LunarLander (8, 2); [64, 64], [256, 256] and [400, 300] hidden layers
LAYER_SHAPES = [
    (inputs, outputs)
    for inputs in (3, 4, 8, 10, 11, 14, 17, 23, 64, 256, 300, 400)
    for outputs in (1, 2, 3, 6, 64, 256, 300, 400)
]


def _batched(bias: th.Tensor, inputs: th.Tensor, weight: th.Tensor) -> th.Tensor:
    return th.baddbmm(bias, inputs, weight)


def compare(agents: int, batch: int, seed: int) -> dict[str, dict[str, Any]]:
    """The three comparisons of the module's docstring over :data:`LAYER_SHAPES`, for groups of ``agents``."""
    generator = th.Generator().manual_seed(seed)
    counts = {name: {"shapes": 0, "differ": 0, "max_abs_difference": 0.0} for name in ("rows", "agents", "plain")}

    def note(name: str, a: th.Tensor, b: th.Tensor) -> None:
        counts[name]["shapes"] += 1
        if not th.equal(a, b):
            counts[name]["differ"] += 1
            counts[name]["max_abs_difference"] = max(counts[name]["max_abs_difference"], float((a - b).abs().max()))

    for inputs, outputs in LAYER_SHAPES:
        weight = th.randn(agents, inputs, outputs, generator=generator) / inputs**0.5
        bias = th.randn(agents, 1, outputs, generator=generator)
        x = th.randn(agents, batch, inputs, generator=generator)
        grad = th.zeros(agents, batch, outputs)
        grad[:, 0] = th.randn(agents, outputs, generator=generator)
        full, one = _batched(bias, x, weight)[:, :1], _batched(bias, x[:, :1], weight)
        full_grad = th.bmm(grad, weight.transpose(1, 2))[:, :1]
        one_grad = th.bmm(grad[:, :1], weight.transpose(1, 2))
        note("rows", th.cat([full, full_grad], dim=-1), th.cat([one, one_grad], dim=-1))
        pair = _batched(bias[:2], x[:2], weight[:2])
        note("agents", _batched(bias, x, weight)[:2], pair)
        plain = th.addmm(bias[0], x[0], weight[0])
        note("plain", pair[0], plain)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, nargs="+", default=[3, 10, 64])
    parser.add_argument("--batch", type=int, default=256, help="the rows of a sampled batch (TD3's batch_size)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    th.set_num_threads(1)
    results: dict[str, Any] = {
        "command": f"benchmarks/product_rounding.py --agents {' '.join(map(str, args.agents))} --batch {args.batch}",
        "cpu": cpu_model_name(),
        "torch": th.__version__,
        "threads": 1,
        "batch": args.batch,
        "groups": {str(agents): compare(agents, args.batch, args.seed) for agents in args.agents},
    }
    for agents, counts in results["groups"].items():
        for name, count in counts.items():
            print(
                f"K={agents:>3} {name:<7} {count['differ']:>3} of {count['shapes']} shapes differ, "
                f"largest difference {count['max_abs_difference']:.3g}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
