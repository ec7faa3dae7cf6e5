"""Does ``torch.compile`` keep the batched engine's arithmetic? A critic's loss and gradients, eager and compiled.

    OMP_NUM_THREADS=1 python benchmarks/compiled_update.py --json benchmarks/results/compiled_update_cpu.json

A critic of K agents as BatchedTD3 builds it (three ``AgentLinear`` layers, ``[64, 64]``, Pendulum's 3 observations
and 1 action), the same weights twice: the mean squared error of each agent's batch summed over the agents (as
``BatchedTD3.train``'s critic loss) and its backward, eager and through ``torch.compile`` (default mode). It reports
whether the loss and every gradient are bit-identical, the largest gradient difference, the compile time and the
time of one step each (process CPU time on the CPU, median of ``--repeats`` rounds of ``--steps`` steps, interleaved).
A compiled update step is only an option for the engine where it keeps a run's record.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch as th
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout without installing

from sb3_ablation.batched.policies import AgentLinear
from sb3_ablation.bench.measure import cpu_model_name

LAYERS = ((4, 64), (64, 64), (64, 1))  # (observations + action, hidden), (hidden, hidden), (hidden, Q)


def _critic(agents: int, seed: int, device: str) -> list[AgentLinear]:
    th.manual_seed(seed)
    return [AgentLinear.from_linears([nn.Linear(i, o) for _ in range(agents)]).to(device) for i, o in LAYERS]


def _loss(layers: list[AgentLinear], inputs: th.Tensor, targets: th.Tensor) -> th.Tensor:
    hidden = th.relu(layers[0](inputs))
    hidden = th.relu(layers[1](hidden))
    return ((layers[2](hidden) - targets) ** 2).mean(dim=(1, 2)).sum()


def _step(loss_fn: Any, layers: list[AgentLinear], inputs: th.Tensor, targets: th.Tensor) -> th.Tensor:
    for layer in layers:
        for parameter in layer.parameters():
            parameter.grad = None
    loss = loss_fn(layers, inputs, targets)
    loss.backward()
    return loss


def compare(agents: int, batch: int, steps: int, repeats: int, device: str) -> dict[str, Any]:
    """Eager against compiled for ``agents`` agents (see the module docstring)."""
    eager_layers, compiled_layers = _critic(agents, 0, device), _critic(agents, 0, device)
    generator = th.Generator().manual_seed(1)
    inputs = th.randn(agents, batch, LAYERS[0][0], generator=generator).to(device)
    targets = th.randn(agents, batch, 1, generator=generator).to(device)
    compiled = th.compile(_loss)
    started = time.perf_counter()
    compiled_loss = _step(compiled, compiled_layers, inputs, targets)
    compile_s = time.perf_counter() - started
    eager_loss = _step(_loss, eager_layers, inputs, targets)
    pairs = [
        (a.grad, b.grad)
        for x, y in zip(eager_layers, compiled_layers, strict=True)
        for a, b in zip(x.parameters(), y.parameters(), strict=True)
    ]
    differ = [a is None or b is None or not th.equal(a, b) for a, b in pairs]
    largest = max(float((a - b).abs().max()) for a, b in pairs if a is not None and b is not None)
    clock = time.process_time if device == "cpu" else time.perf_counter
    times: dict[str, list[float]] = {"eager": [], "compiled": []}
    for _ in range(repeats):
        for name, (loss_fn, layers) in {"eager": (_loss, eager_layers), "compiled": (compiled, compiled_layers)}.items():
            if device != "cpu":
                th.cuda.synchronize()
            started = clock()
            for _ in range(steps):
                _step(loss_fn, layers, inputs, targets)
            if device != "cpu":
                th.cuda.synchronize()
            times[name].append((clock() - started) / steps * 1e6)
    return {
        "loss_equal": bool(th.equal(eager_loss, compiled_loss)),
        "gradients_differing": f"{sum(differ)} of {len(differ)}",
        "largest_gradient_difference": largest,
        "compile_s": compile_s,
        "step_us": {name: {"median": statistics.median(v), "min": min(v), "max": max(v)} for name, v in times.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, nargs="+", default=[10, 64])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    th.set_num_threads(1)
    results = {
        "command": f"benchmarks/compiled_update.py --agents {' '.join(map(str, args.agents))} --batch {args.batch} "
        f"--steps {args.steps} --repeats {args.repeats} --device {args.device}",
        "device": args.device,
        "cpu": cpu_model_name(),
        "torch": th.__version__,
        "threads": 1,
        "agents": {str(k): compare(k, args.batch, args.steps, args.repeats, args.device) for k in args.agents},
    }
    for agents, result in results["agents"].items():
        step = result["step_us"]
        print(
            f"K={agents:>3}: loss equal {result['loss_equal']}, gradients differing {result['gradients_differing']} "
            f"(largest {result['largest_gradient_difference']:.3g}); step {step['eager']['median']:.0f} us eager, "
            f"{step['compiled']['median']:.0f} us compiled (compiling {result['compile_s']:.1f} s)"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
