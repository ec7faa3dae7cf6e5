"""Markdown tables and summary lines of the throughput benchmark (ready to paste into the README)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sb3_ablation.bench.measure import LEARN_PHASES, is_matmul_op

# Speed targets: the minimal ratio to SB3's TD3 per (measurement, model, net_arch), at batch size 256
TARGET_RATIOS = {
    ("gradient steps", "td3_speed", (400, 300)): 1.6,
    ("gradient steps", "td3_speed", (256, 256)): 1.5,
    ("learn()", "td3", (64, 64)): 1.5,
    ("learn()", "td3", (400, 300)): 1.25,
    ("learn()", "td3_speed", (400, 300)): 1.7,
}


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], label_columns: int = 2) -> str:
    """
    An aligned markdown table.

    :param headers: column titles
    :param rows: cells (strings), one list per row
    :param label_columns: how many leading columns hold labels (left-aligned); the others hold numbers (right-aligned)
    :return: the table
    """
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    right = [i >= label_columns for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" if r else ":" + "-" * (w + 1) for w, r in zip(widths, right, strict=True)) + "|"
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def arch_label(net_arch: Sequence[int]) -> str:
    """:return: ``[400, 300]`` for ``(400, 300)``"""
    return "[" + ", ".join(map(str, net_arch)) + "]"


def _rate_and_ratio_cells(row: dict[str, Any]) -> list[str]:
    cells = [arch_label(row["net_arch"]), row["model"], f"{row['median']:.1f}", f"{row['min']:.1f}", f"{row['max']:.1f}"]
    if "ratio" not in row:
        return [*cells, "n/a", "n/a"]
    return [*cells, f"{row['ratio']:.2f}x", f"{row['ratio_min']:.2f}-{row['ratio_max']:.2f}"]


def gradient_table(rows: Sequence[dict[str, Any]]) -> str:
    """:return: the markdown table of gradient steps per second"""
    headers = ["net_arch", "model", "steps/s median", "min", "max", "vs SB3", "vs SB3 range", "matmul share", "matmul-bound"]
    cells = []
    for row in rows:
        profiled = row.get("matmul_share") is not None
        cells.append(
            [
                *_rate_and_ratio_cells(row),
                f"{100 * row['matmul_share']:.0f}%" if profiled else "-",
                f"{row['matmul_bound_steps_per_s']:.0f}" if profiled else "-",
            ]
        )
    return format_table(headers, cells)


def learn_table(rows: Sequence[dict[str, Any]]) -> str:
    """:return: the markdown table of ``learn()`` environment steps per second, with milliseconds per step by phase"""
    phases = [*LEARN_PHASES, "loop"]
    headers = ["net_arch", "model", "env steps/s median", "min", "max", "vs SB3", "vs SB3 range", *(f"{p} ms" for p in phases)]
    cells = [[*_rate_and_ratio_cells(row), *(f"{row['phases_ms'][phase]:.2f}" for phase in phases)] for row in rows]
    return format_table(headers, cells)


def operators_table(rows: Sequence[dict[str, Any]]) -> str:
    """:return: the markdown table of each row's costliest operators (microseconds per gradient step)"""
    cells = [
        [arch_label(row["net_arch"]), row["model"], op, "yes" if is_matmul_op(op) else "", f"{microseconds:.1f}"]
        for row in rows
        for op, microseconds in row.get("top_ops_us_per_step", {}).items()
    ]
    return format_table(["net_arch", "model", "operator", "matmul", "us/step"], cells, label_columns=4)


def speed_mode_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """:return: one line per architecture saying what the speed mode chose there"""
    chosen = {arch_label(row["net_arch"]): row["speed_mode"] for row in rows if row.get("speed_mode")}
    return [f"{label}: {description}" for label, description in chosen.items()]


def target_lines(measurement: str, rows: Sequence[dict[str, Any]], batch_size: int) -> list[str]:
    """
    :param measurement: ``"gradient steps"`` or ``"learn()"``
    :param rows: that measurement's summary rows
    :param batch_size: the batch size of the rows (targets hold for 256)
    :return: one line per speed target the rows can check, with the shortfall where missed
    """
    lines = []
    for row in rows:
        target = TARGET_RATIOS.get((measurement, row["model"], tuple(row["net_arch"])))
        if target is None or "ratio" not in row or batch_size != 256:
            continue
        verdict = "met" if row["ratio"] >= target else f"NOT met (short by {100 * (1 - row['ratio'] / target):.0f}%)"
        label = arch_label(row["net_arch"])
        lines.append(
            f"target: {measurement} {row['model']} at {label} >= {target:.2f}x SB3's TD3: {row['ratio']:.2f}x "
            f"(per-repeat {row['ratio_min']:.2f}-{row['ratio_max']:.2f}), {verdict}"
        )
    return lines


def hardware_line(hardware: dict[str, Any]) -> str:
    """:return: the hardware in one line"""
    if hardware["bfloat16_instructions"]:
        speedup = hardware["bfloat16_speedup_256x400x300"]
        bfloat16 = f"native bfloat16 products, measured at {speedup:.2f}x float32 speed (256x400x300)"
    else:
        bfloat16 = "no native bfloat16 products"
    return (
        f"{hardware['cpu']} ({hardware['cpu_count']} CPUs, {hardware['cpu_capability']}; {bfloat16}), "
        f"{hardware['torch_threads']} torch thread(s), torch {hardware['torch']}, "
        f"stable-baselines3 {hardware['stable_baselines3']}, Python {hardware['python']}"
    )
