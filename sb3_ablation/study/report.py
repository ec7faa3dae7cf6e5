"""The statistical report of a study: ``<out>/report.md`` and its PNG figures in ``<out>/figures/``.

Statistics follow Agarwal et al. (2021), "Deep RL at the edge of the statistical precipice", with their library
rliable: the final return of a run is its last evaluation (mean of ``eval_episodes`` deterministic episodes at the end
of training); per variant we report the interquartile mean (IQM) and the mean of the final returns with 95%
stratified-bootstrap confidence intervals, the difference of IQMs to the baseline (full TD3) with a 95% bootstrap CI
(runs of the two variants resampled independently), and the probability of improvement P(variant > baseline) (the
Mann-Whitney U statistic over pairs of runs). A difference is called significant when its 95% CI excludes 0.

The across-env aggregate uses normalized scores ``(score - random) / (reference - random)``, with the random-policy and
reference (rl-zoo TD3) scores of :data:`REFERENCE_SCORES`, when every env of the study has them; otherwise min-max
normalisation over all final returns of the study on that env. Bootstraps use a fixed seed, so a report is
reproducible.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rliable import library as rly

from sb3_ablation.study.config import read_manifest
from sb3_ablation.study.runner import iter_runs, safe_name
from sb3_ablation.study.variants import parse_variant

CONFIDENCE = 0.95
DEFAULT_REPS = 10_000
DEFAULT_SEED = 0
# curves have one bootstrap per evaluation point and the probability of improvement a rank test per resample:
# fewer replications keep the report fast, and their CIs are for reading, not for the significance decision
CURVE_REPS = 2_000
POI_REPS = 2_000
MAX_CURVES = 12

# env (without version) -> (random-policy score, reference score) for normalized scores.
# Random policy: uniform random actions; the classic-control and Box2D numbers were measured with gymnasium 1.4
# (100 episodes; 30 for BipedalWalker), the MuJoCo ones are D4RL's (Fu et al., 2020, REF_MIN_SCORE).
# Reference: rl-baselines3-zoo's benchmark of SB3's TD3 (benchmark.md), trained with the zoo's hyperparameters.
REFERENCE_SCORES: dict[str, tuple[float, float]] = {
    "Pendulum": (-1207.6, -151.9),
    "MountainCarContinuous": (-33.3, 93.5),
    "LunarLanderContinuous": (-212.7, 207.5),
    "BipedalWalker": (-106.3, 306.0),
    "HalfCheetah": (-280.2, 9655.7),
    "Hopper": (-20.3, 3606.4),
    "Walker2d": (1.6, 4717.8),
    "Ant": (-325.6, 5813.3),
}


def iqm(scores: np.ndarray) -> float:
    """
    Interquartile mean of all scores: exactly rliable's ``aggregate_iqm`` (``scipy.stats.trim_mean(scores, 0.25,
    axis=None)``), without scipy's per-call overhead, which dominates bootstraps of a few runs.
    """
    values = np.sort(np.asarray(scores, dtype=np.float64).ravel())
    cut = int(0.25 * values.size)
    return float(values[cut : values.size - cut].mean())


def mean(scores: np.ndarray) -> float:
    return float(np.mean(scores))


def probability_of_improvement(scores_x: np.ndarray, scores_y: np.ndarray) -> float:
    """
    P(X > Y): for each task the fraction of pairs of runs where X wins, ties counting half (the Mann-Whitney U
    statistic over ``num_runs_x * num_runs_y``), averaged over tasks. The same as rliable's
    ``probability_of_improvement``, vectorised.

    :param scores_x: (runs_x, tasks)
    :param scores_y: (runs_y, tasks)
    """
    x, y = scores_x[:, None, :], scores_y[None, :, :]
    return float(np.mean((x > y).mean(axis=(0, 1)) + 0.5 * (x == y).mean(axis=(0, 1))))


@contextlib.contextmanager
def seeded_numpy(seed: int) -> Iterator[None]:
    """rliable's stratified bootstrap draws from NumPy's global generator: seed it here and restore it afterwards."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def interval(score_dict: dict[str, Any], func, reps: int, seed: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """rliable's ``get_interval_estimates`` (percentile stratified bootstrap), seeded."""
    with seeded_numpy(seed):
        return rly.get_interval_estimates(score_dict, func, reps=reps, confidence_interval_size=CONFIDENCE)


# ----------------------------------------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------------------------------------


@dataclass
class RunCurves:
    """Evaluations of one run: ``timesteps`` and, per metric, the values at those timesteps."""

    seed: int
    timesteps: np.ndarray
    values: dict[str, np.ndarray]

    @property
    def final_return(self) -> float:
        return float(self.values["mean_return"][-1])


@dataclass
class StudyData:
    """What a study folder holds, as the report needs it."""

    out: Path
    manifest: dict
    envs: list[str]
    variants: list[str]
    runs: dict[str, dict[str, list[RunCurves]]]  # env -> variant -> finished runs, by seed
    failed: list[dict] = field(default_factory=list)
    missing: list[tuple[str, str, int]] = field(default_factory=list)

    def final_returns(self, env: str, variant: str) -> np.ndarray:
        return np.array([run.final_return for run in self.runs.get(env, {}).get(variant, [])], dtype=np.float64)


def _as_array(values: Sequence[Any]) -> np.ndarray:
    return np.array([np.nan if value is None else value for value in values], dtype=np.float64)


def load_study(out: str | os.PathLike) -> StudyData:
    """
    Read a study folder: the manifest and every run file.

    :param out: the study's output folder
    :return: finished runs grouped by env and variant, failed runs, and runs the manifest expects but nobody wrote
    """
    manifest = read_manifest(out)
    envs, variants, seeds = list(manifest["envs"]), list(manifest["variants"]), list(manifest["seeds"])
    runs: dict[str, dict[str, list[RunCurves]]] = {}
    failed, done = [], set()
    for record in iter_runs(out):
        key = (record["env"], record["variant"], record["seed"])
        if record.get("status") != "ok":
            failed.append(record)
            continue
        evaluations = record.get("evaluations") or {}
        if not evaluations.get("timesteps"):
            failed.append({**record, "error": "no evaluations recorded"})
            continue
        done.add(key)
        curves = RunCurves(
            seed=int(record["seed"]),
            timesteps=np.asarray(evaluations["timesteps"], dtype=np.int64),
            values={name: _as_array(values) for name, values in evaluations.items() if name != "timesteps"},
        )
        runs.setdefault(record["env"], {}).setdefault(record["variant"], []).append(curves)
        if record["env"] not in envs:
            envs.append(record["env"])
        if record["variant"] not in variants:
            variants.append(record["variant"])
    for by_variant in runs.values():
        for run_list in by_variant.values():
            run_list.sort(key=lambda run: run.seed)
    failed_keys = {(r["env"], r["variant"], r["seed"]) for r in failed}
    missing = [
        (env, variant, seed)
        for env in envs
        for variant in variants
        for seed in seeds
        if (env, variant, seed) not in done and (env, variant, seed) not in failed_keys
    ]
    return StudyData(Path(out), manifest, envs, variants, runs, failed, missing)


# ----------------------------------------------------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------------------------------------------------


@dataclass
class VariantStats:
    """Final-return statistics of one variant on one env (CIs are (low, high))."""

    variant: str
    n_runs: int
    iqm: float
    iqm_ci: tuple[float, float]
    mean: float
    mean_ci: tuple[float, float]
    diff: float | None = None  # IQM(variant) - IQM(baseline)
    diff_ci: tuple[float, float] | None = None
    poi: float | None = None  # P(variant > baseline)
    poi_ci: tuple[float, float] | None = None

    @property
    def significant(self) -> bool:
        return self.diff_ci is not None and (self.diff_ci[0] > 0 or self.diff_ci[1] < 0)


def final_return_statistics(
    scores: dict[str, np.ndarray], baseline: str | None, reps: int = DEFAULT_REPS, seed: int = DEFAULT_SEED
) -> dict[str, VariantStats]:
    """
    IQM and mean with 95% stratified-bootstrap CIs for each variant, and against the baseline the IQM difference (95%
    CI from an independent bootstrap of both variants' runs) and the probability of improvement.

    :param scores: variant -> final returns, one per run (or a (runs, envs) matrix of normalized scores, resampled
        within each env); variants without runs are left out
    :param baseline: the variant the others are compared with (``None``: no comparison)
    :param reps: bootstrap replications
    :param seed: bootstrap seed
    :return: variant -> statistics
    """
    matrices = {}
    for variant, values in scores.items():
        values = np.asarray(values, dtype=np.float64)
        if len(values):
            matrices[variant] = values.reshape(-1, 1) if values.ndim == 1 else values  # (runs, tasks)
    points, cis = interval(matrices, lambda x: np.array([iqm(x), mean(x)]), reps, seed)
    stats = {
        variant: VariantStats(
            variant=variant,
            n_runs=matrices[variant].shape[0],
            iqm=float(points[variant][0]),
            iqm_ci=(float(cis[variant][0, 0]), float(cis[variant][1, 0])),
            mean=float(points[variant][1]),
            mean_ci=(float(cis[variant][0, 1]), float(cis[variant][1, 1])),
        )
        for variant in matrices
    }
    if baseline in matrices:
        others = {variant: [matrix, matrices[baseline]] for variant, matrix in matrices.items() if variant != baseline}
        if others:
            diff_points, diff_cis = interval(others, lambda x, y: np.array([iqm(x) - iqm(y)]), reps, seed + 1)
            poi_points, poi_cis = interval(
                others, lambda x, y: np.array([probability_of_improvement(x, y)]), min(reps, POI_REPS), seed + 2
            )
            for variant in others:
                stats[variant].diff = float(diff_points[variant][0])
                stats[variant].diff_ci = (float(diff_cis[variant][0, 0]), float(diff_cis[variant][1, 0]))
                stats[variant].poi = float(poi_points[variant][0])
                stats[variant].poi_ci = (float(poi_cis[variant][0, 0]), float(poi_cis[variant][1, 0]))
    return stats


def aligned_curves(runs: list[RunCurves], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """
    The evaluations of several runs at the timesteps all of them have.

    :return: ``(timesteps, values)`` with ``values`` of shape (runs, timesteps)
    """
    common = set(runs[0].timesteps.tolist())
    for run in runs[1:]:
        common &= set(run.timesteps.tolist())
    timesteps = np.array(sorted(common), dtype=np.int64)
    rows = []
    for run in runs:
        position = {int(t): i for i, t in enumerate(run.timesteps)}
        rows.append([run.values[metric][position[int(t)]] for t in timesteps])
    return timesteps, np.array(rows, dtype=np.float64).reshape(len(runs), len(timesteps))


def curve_estimates(values: np.ndarray, reps: int = CURVE_REPS, seed: int = DEFAULT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """
    Mean over runs at each timestep with its 95% stratified-bootstrap CI.

    :param values: (runs, timesteps); NaN entries (e.g. a bias with no samples) are ignored
    :return: ``(mean, ci)`` with ``ci`` of shape (2, timesteps)
    """
    if values.shape[0] < 2:
        point = values.mean(axis=0) if len(values) else np.full(values.shape[1], np.nan)
        return point, np.vstack([point, point])
    with np.errstate(all="ignore"):
        points, cis = interval(
            {"curve": values[:, None, :]}, lambda x: np.nanmean(x, axis=(0, 1)), reps, seed
        )  # (runs, tasks=1, T)
    return points["curve"], cis["curve"]


def env_reference(env_id: str) -> tuple[float, float] | None:
    """The (random, reference) scores of an env id, matched without its version (and ``module:`` prefix)."""
    base = env_id.rpartition(":")[2].rsplit("-v", 1)[0]
    return REFERENCE_SCORES.get(base)


def normalized_scores(data: StudyData, variants: list[str]) -> tuple[dict[str, np.ndarray], str]:
    """
    Normalized final returns, a (runs, envs) matrix per variant, for the across-env aggregate. Every variant gets the
    same number of runs per env (the smallest number of finished runs; the lowest seeds) so the matrices are full.

    :return: variant -> matrix, and a sentence saying how scores were normalized
    """
    if all(env_reference(env) is not None for env in data.envs):
        bounds = {env: env_reference(env) for env in data.envs}
        how = (
            "normalized score = (return - random) / (reference - random), with random-policy scores and rl-zoo's "
            "published TD3 scores as reference: "
            + ", ".join(f"{env} ({low:g}, {high:g})" for env, (low, high) in bounds.items())
        )
    else:
        bounds = {}
        for env in data.envs:
            all_scores = np.concatenate([data.final_returns(env, v) for v in variants] or [np.zeros(0)])
            bounds[env] = (float(np.min(all_scores)), float(np.max(all_scores))) if len(all_scores) else (0.0, 1.0)
        how = (
            "normalized score = (return - lowest) / (highest - lowest), the lowest and highest final returns of any "
            "run of the study on that env (not every env has reference scores)"
        )
    n_runs = min(len(data.final_returns(env, variant)) for env in data.envs for variant in variants)
    matrices = {}
    for variant in variants:
        columns = []
        for env in data.envs:
            low, high = bounds[env]
            columns.append((data.final_returns(env, variant)[:n_runs] - low) / ((high - low) or 1.0))
        matrices[variant] = np.stack(columns, axis=1)
    return matrices, how


# ----------------------------------------------------------------------------------------------------------------------
# Figures
# ----------------------------------------------------------------------------------------------------------------------


def _palette(variants: Sequence[str]) -> dict[str, Any]:
    import seaborn as sns

    colors = sns.color_palette("colorblind", n_colors=max(len(variants), 1)) if len(variants) <= 10 else None
    if colors is None:
        colors = sns.color_palette("husl", n_colors=len(variants))
    return dict(zip(variants, colors, strict=True))


def _save(fig, path: Path) -> None:
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)


def plot_curves(
    env: str,
    curves: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]],
    colors: dict[str, Any],
    ylabel: str,
    title: str,
    path: Path,
    zero_line: bool = False,
) -> None:
    """Mean curves with 95% CI bands, one per variant (``curves``: variant -> (timesteps, mean, ci, n_runs))."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for variant, (timesteps, point, ci, n_runs) in curves.items():
        ax.plot(timesteps, point, label=f"{variant} (n={n_runs})", color=colors[variant], linewidth=1.8)
        ax.fill_between(timesteps, ci[0], ci[1], color=colors[variant], alpha=0.18, linewidth=0)
    if zero_line:
        ax.axhline(0.0, color="black", linewidth=0.8, linestyle="--", label="no bias")
    ax.set_xlabel("environment steps")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{env}: {title}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best", title="variant (runs)", title_fontsize="small")
    _save(fig, path)


def plot_ecdf(env: str, scores: dict[str, np.ndarray], colors: dict[str, Any], path: Path) -> None:
    """Empirical CDF of the final returns of each variant."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for variant, values in scores.items():
        values = np.sort(values)
        fractions = np.arange(1, len(values) + 1) / len(values)
        ax.step(np.concatenate([[values[0]], values]), np.concatenate([[0.0], fractions]), where="post",
                label=f"{variant} (n={len(values)})", color=colors[variant], linewidth=1.8)  # fmt: skip
    ax.set_xlabel("final return (episode return, mean of the last evaluation)")
    ax.set_ylabel("fraction of runs with final return <= x")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{env}: distribution of final returns (ECDF)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best", title="variant (runs)", title_fontsize="small")
    _save(fig, path)


def plot_intervals(
    title: str, stats: dict[str, VariantStats], colors: dict[str, Any], xlabel: str, path: Path, names=("IQM", "mean")
) -> None:
    """IQM and mean with their 95% CIs per variant (the layout of rliable's interval plots, with labelled axes)."""
    import matplotlib.pyplot as plt

    variants = list(stats)
    rows = np.arange(len(variants))[::-1]  # first variant on top
    fig, axes = plt.subplots(1, 2, figsize=(10, 1.2 + 0.45 * len(variants)), sharey=True)
    for ax, name in zip(axes, names, strict=True):
        for row, variant in zip(rows, variants, strict=True):
            s = stats[variant]
            point, (low, high) = (s.iqm, s.iqm_ci) if name == "IQM" else (s.mean, s.mean_ci)
            ax.barh(row, high - low, left=low, height=0.6, color=colors[variant], alpha=0.75)
            ax.vlines(point, row - 0.3, row + 0.3, color="black", linewidth=1.5)
        ax.set_title(f"{name} (bar: 95% CI, line: estimate)", fontsize="medium")
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(rows, variants)
    axes[0].set_ylabel("variant")
    fig.suptitle(title)
    fig.tight_layout()
    _save(fig, path)


# ----------------------------------------------------------------------------------------------------------------------
# The report
# ----------------------------------------------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:,.{digits}f}"


def _fmt_ci(ci: tuple[float, float] | None, digits: int = 1) -> str:
    return "" if ci is None else f" [{_fmt(ci[0], digits)}, {_fmt(ci[1], digits)}]"


def _stats_cells(stats: VariantStats, digits: int = 1) -> str:
    """The table cells IQM | mean | Δ IQM | P(> baseline) | significant of one variant, with their CIs."""
    cells = [
        f"{_fmt(stats.iqm, digits)}{_fmt_ci(stats.iqm_ci, digits)}",
        f"{_fmt(stats.mean, digits)}{_fmt_ci(stats.mean_ci, digits)}",
    ]
    if stats.diff is None:  # the baseline itself
        cells += ["—", "—", "—"]
    else:
        cells += [
            f"{_fmt(stats.diff, digits)}{_fmt_ci(stats.diff_ci, digits)}",
            f"{_fmt(stats.poi, 2)}{_fmt_ci(stats.poi_ci, 2)}",
            "**yes**" if stats.significant else "no",
        ]
    return " | ".join(cells)


def _what_changed(variant: str) -> str:
    """How a variant reads in a sentence: 'switching off clipped_double_q', 'ref_sb3_td3', ..."""
    try:
        parsed = parse_variant(variant)
    except ValueError:
        return variant
    if parsed.is_reference:
        return parsed.describe()
    if variant.startswith("no_"):
        return "switching off " + " and ".join(part[3:] for part in variant.split("+"))
    return f"{variant} ({parsed.describe()})"


def _describe(variant: str) -> str:
    try:
        return parse_variant(variant).describe()
    except ValueError:
        return ""


def env_summary(env: str, stats: dict[str, VariantStats], baseline: str | None, final_bias: dict[str, float]) -> str:
    """A short generated paragraph: which variants differ significantly from the baseline, and the overestimation."""
    if baseline not in stats:
        return f"No finished runs of the baseline ({baseline}) on {env}: no comparison."
    others = [s for s in stats.values() if s.variant != baseline and s.diff is not None]
    lines = []
    worse = sorted((s for s in others if s.significant and s.diff < 0), key=lambda s: s.diff)
    better = sorted((s for s in others if s.significant and s.diff > 0), key=lambda s: -s.diff)
    neutral = [s for s in others if not s.significant]
    for group, verb in ((worse, "lowered"), (better, "raised")):
        for s in group:
            lines.append(
                f"- **{_what_changed(s.variant)}** {verb} the IQM final return by {_fmt(abs(s.diff))} "
                f"(95% CI of the difference {_fmt_ci(s.diff_ci).strip()}; P({s.variant} > {baseline}) = {_fmt(s.poi, 2)})."
            )
    if neutral:
        names = ", ".join(f"{s.variant} ({_fmt(s.diff, 1)})" for s in neutral)
        lines.append(f"- No significant difference (95% CI of the IQM difference includes 0): {names}.")
    if not others:
        lines.append(f"- Only {baseline} has finished runs.")
    finite_bias = {v: b for v, b in final_bias.items() if b is not None and math.isfinite(b)}
    if finite_bias:
        most = max(finite_bias, key=lambda v: finite_bias[v])
        text = (
            "- Value overestimation at the end of training (mean Q1(s, a) minus the discounted return): "
            f"{most} {_fmt(finite_bias[most])}"
        )
        if baseline in finite_bias and most != baseline:
            text += f" (the largest), {baseline} {_fmt(finite_bias[baseline])}"
        lines.append(text + ".")
    counts = sorted({s.n_runs for s in stats.values()})
    runs = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    head = f"Compared with {baseline} on {env}, with {runs} runs per variant:"
    return "\n".join([head, *lines])


def write_report(
    out: str | os.PathLike, reps: int = DEFAULT_REPS, seed: int = DEFAULT_SEED, baseline: str | None = None
) -> Path:
    """
    Write ``<out>/report.md`` and its figures (``<out>/figures/*.png``).

    :param out: the study folder
    :param reps: bootstrap replications for the final-return statistics
    :param seed: bootstrap seed
    :param baseline: variant to compare against (default ``td3``, or the study's first variant without it)
    :return: the report's path
    """
    import matplotlib

    matplotlib.use("Agg")
    data = load_study(out)
    out = Path(out)
    figures = out / "figures"
    variants = [v for v in data.variants if any(v in data.runs.get(env, {}) for env in data.envs)]
    baseline = baseline or ("td3" if "td3" in data.variants else (variants[0] if variants else None))
    colors = _palette(data.variants)
    settings = data.manifest.get("settings", {})
    lines = [
        f"# Ablation study report: {', '.join(data.envs)}",
        "",
        f"Study folder `{out}`. Variants: {', '.join(data.variants)}; seeds: {', '.join(map(str, data.manifest['seeds']))}; "
        f"training steps: {settings.get('n_timesteps') or 'the zoo default of each env'}; evaluation every "
        f"{settings.get('eval_freq') or 'n_timesteps/20'} steps with {settings.get('eval_episodes')} deterministic episodes. "
        f"Baseline: **{baseline}**.",
        "",
        "Final return = the mean return of the last evaluation of a run (at the end of training). IQM = interquartile "
        "mean (the mean of the middle 50% of runs). Brackets are 95% stratified-bootstrap confidence intervals "
        f"(rliable, {reps} resamples; seed {seed}). Δ IQM is the difference to the baseline; it is *significant* when "
        "its CI excludes 0. P(> baseline) is the probability that a run of the variant beats a run of the baseline.",
        "",
    ]
    if data.failed or data.missing:
        lines += [f"**Incomplete study:** {len(data.failed)} failed and {len(data.missing)} missing runs (see the end).", ""]

    for env in data.envs:
        by_variant = data.runs.get(env, {})
        env_variants = [v for v in data.variants if v in by_variant]
        lines += [f"## {env}", ""]
        if not env_variants:
            lines += ["No finished runs.", ""]
            continue
        scores = {v: data.final_returns(env, v) for v in env_variants}
        stats = final_return_statistics(scores, baseline, reps=reps, seed=seed)
        final_bias = {}
        for v in env_variants:
            biases = np.array([run.values["bias"][-1] for run in by_variant[v]], dtype=np.float64)
            final_bias[v] = float(np.nanmean(biases)) if np.isfinite(biases).any() else float("nan")

        lines += [env_summary(env, stats, baseline, final_bias), ""]
        lines += [
            f"| variant | what it is | runs | IQM final return | mean final return | Δ IQM vs {baseline} | "
            f"P(> {baseline}) | significant | overestimation at end |",
            "|---|---|---:|---:|---:|---:|---:|:---:|---:|",
        ]
        for v in env_variants:
            lines.append(f"| {v} | {_describe(v)} | {stats[v].n_runs} | {_stats_cells(stats[v])} | {_fmt(final_bias[v])} |")
        lines.append("")

        # curves: with many variants (factorial) only the baseline and the most different ones stay readable
        shown = env_variants
        if len(env_variants) > MAX_CURVES:
            ranked = sorted((v for v in env_variants if v != baseline), key=lambda v: -abs(stats[v].diff or 0.0))
            shown = ([baseline] if baseline in env_variants else []) + ranked[: MAX_CURVES - 1]
            lines += [f"Curves show {baseline} and the {MAX_CURVES - 1} variants that differ most from it.", ""]
        name = safe_name(env)
        for metric, ylabel, title, suffix, zero in (
            ("mean_return", "episode return (mean of evaluation episodes)", "learning curves", "learning_curves", False),
            (
                "bias",
                "Q1(s, a) - discounted return (return units)",
                "value overestimation of critic 1",
                "overestimation",
                True,
            ),
        ):
            curves = {}
            for i, v in enumerate(shown):
                timesteps, values = aligned_curves(by_variant[v], metric)
                point, ci = curve_estimates(values, seed=seed + i)
                curves[v] = (timesteps, point, ci, values.shape[0])
            title_full = f"{title} (mean and 95% CI over runs)"
            plot_curves(env, curves, colors, ylabel, title_full, figures / f"{name}_{suffix}.png", zero_line=zero)
        plot_ecdf(env, {v: scores[v] for v in shown}, colors, figures / f"{name}_final_return_ecdf.png")
        plot_intervals(f"{env}: final return", stats, colors, "final episode return", figures / f"{name}_final_return_ci.png")
        lines += [
            f"![{env}: learning curves](figures/{name}_learning_curves.png)",
            "",
            f"![{env}: final return IQM and mean with 95% CIs](figures/{name}_final_return_ci.png)",
            "",
            f"![{env}: ECDF of final returns](figures/{name}_final_return_ecdf.png)",
            "",
            f"![{env}: value overestimation](figures/{name}_overestimation.png)",
            "",
            "Overestimation: at each evaluation, critic 1's Q(s, a) at the states and actions of the evaluation "
            "episodes minus the discounted return obtained from there to the end of the episode (as in Fig. 1 of the "
            "TD3 paper; above 0 = overestimation). Episodes cut by a time limit make the true return look smaller "
            "near the cut.",
            "",
        ]

    lines += _aggregate_section(data, variants, baseline, colors, figures, reps, seed)
    lines += _failures_section(data)
    path = out / "report.md"
    tmp = path.with_name(".report.md.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def _aggregate_section(
    data: StudyData, variants: list[str], baseline: str | None, colors: dict[str, Any], figures: Path, reps: int, seed: int
) -> list[str]:
    if len(data.envs) < 2:
        return []
    complete = [v for v in variants if all(len(data.final_returns(env, v)) for env in data.envs)]
    lines = ["## Across environments (normalized scores)", ""]
    if not complete:
        return [*lines, "No variant has finished runs on every env.", ""]
    matrices, how = normalized_scores(data, complete)
    stats = final_return_statistics(matrices, baseline, reps=reps, seed=seed)
    plot_intervals(
        "All envs: normalized final score", stats, colors, "normalized score", figures / "aggregate_normalized_score.png"
    )
    lines += [
        f"{how}. IQM and mean over all runs of all envs ({next(iter(matrices.values())).shape[0]} runs per env and "
        "variant), with stratified-bootstrap CIs (runs resampled within each env).",
        "",
        f"| variant | IQM normalized score | mean normalized score | Δ IQM vs {baseline} | P(> {baseline}) | significant |",
        "|---|---:|---:|---:|---:|:---:|",
    ]
    for v in complete:
        lines.append(f"| {v} | {_stats_cells(stats[v], digits=3)} |")
    lines += ["", "![All envs: normalized final score](figures/aggregate_normalized_score.png)", ""]
    return lines


def _failures_section(data: StudyData) -> list[str]:
    if not data.failed and not data.missing:
        return []
    lines = ["## Failed and missing runs", ""]
    if data.failed:
        lines += ["| env | variant | seed | error |", "|---|---|---:|---|"]
        for record in sorted(data.failed, key=lambda r: (r["env"], r["variant"], r["seed"])):
            error = (record.get("error") or "unknown error").splitlines()[0].replace("|", "\\|")
            lines.append(f"| {record['env']} | {record['variant']} | {record['seed']} | {error} |")
        lines.append("")
    if data.missing:
        lines += [
            f"Missing (never finished): {', '.join(f'{e} {v} seed {s}' for e, v, s in data.missing)}.",
            "",
        ]
    lines += ["Rerun the study command to redo failed and missing runs; finished runs are kept.", ""]
    return lines
