"""
The answer to the exercise, generated from the reports of several studies (their ``report.json`` and ``study.json``):

- per task and component, the primary outcome's verdict with the effect of removing the component and its CI, and
  for an ``unresolved`` comparison the seeds that would resolve it;
- the effects of the factorial designs (main effects and two-way interactions) that ``differ``, and how many stay
  ``unresolved``;
- what the budgets allow: each task's training steps, networks and seeds beside the TD3 paper's (1M steps,
  ``[400, 300]``, 10 seeds), with the paper's Table 2 effect next to ours where the paper has one.

Nothing here computes a statistic: every number is read from a report, so the answer says exactly what the reports
say. README quotes it between ``<!-- generated:studies:answer:start/end -->`` (``benchmarks/fill_readme_findings.py``),
and ``tests/test_findings.py`` regenerates it from the committed run records and compares.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sb3_ablation.study.render.json import model_json
from sb3_ablation.study.render.report import study_model
from sb3_ablation.switches import TABLE

# The TD3 paper's ablation (Fujimoto et al., 2018, Table 2): average return over the last 10 evaluations, 10 seeds,
# 1M steps, [400, 300] networks, Gym v1 MuJoCo tasks. "TD3 - X" is TD3 without component X.
# The repository's committed studies (docs/studies/<name>) that README's answer is built from, in this order: a task's
# leave-one-out column comes from the first study that has it
ANSWER_STUDIES = ("pendulum", "multitask", "pendulum-factorial", "hopper-factorial")

PAPER_STEPS, PAPER_NET_ARCH, PAPER_SEEDS = 1_000_000, [400, 300], 10
PAPER_TABLE2: dict[str, dict[str, float]] = {
    "HalfCheetah": {
        "td3": 9532.99,
        "no_delayed_policy_update": 9590.65,
        "no_target_policy_smoothing": 8987.69,
        "no_clipped_double_q": 9792.80,
    },
    "Hopper": {
        "td3": 3304.75,
        "no_delayed_policy_update": 2407.42,
        "no_target_policy_smoothing": 2392.59,
        "no_clipped_double_q": 1837.32,
    },
    "Walker2d": {
        "td3": 4565.24,
        "no_delayed_policy_update": 4695.50,
        "no_target_policy_smoothing": 4033.67,
        "no_clipped_double_q": 2579.39,
    },
    "Ant": {
        "td3": 4185.06,
        "no_delayed_policy_update": 3754.26,
        "no_target_policy_smoothing": 4155.24,
        "no_clipped_double_q": 849.75,
    },
}


@dataclass(frozen=True)
class StudyReport:
    """
    One study's report and manifest, as written to its folder.

    :param name: the study's folder name
    :param report: its ``report.json``
    :param manifest: its ``study.json``
    """

    name: str
    report: dict[str, Any]
    manifest: dict[str, Any]

    @classmethod
    def read(cls, folder: str | Path) -> StudyReport:
        """
        :param folder: a study folder whose report was written (``sb3-ablation report <folder>``)
        :raise FileNotFoundError: naming the missing file
        """
        folder = Path(folder)
        report = folder / "report.json"
        if not report.is_file():
            raise FileNotFoundError(f"{report}: no report; run `sb3-ablation report {folder}` first")
        manifest = json.loads((folder / "study.json").read_text())
        return cls(folder.name, json.loads(report.read_text()), manifest)

    @classmethod
    def regenerate(cls, folder: str | Path, reps: int = 100) -> StudyReport:
        """
        The report recomputed from ``folder``'s run records, as ``sb3-ablation report`` writes it to ``report.json``.

        :param reps: bootstrap resamples of the IQM intervals (the answer reads none of them, so few do)
        """
        model, data = study_model(folder, reps=reps)
        return cls(Path(folder).name, model_json(model), data.manifest)

    def primary(self, env: str) -> dict[str, Any]:
        """The primary outcome's entry of ``env``."""
        outcomes = self.report["envs"][env]["outcomes"]
        return outcomes[self.report["plan"]["primary"]]

    def budget(self, env: str) -> str:
        """``env``'s training steps and networks, e.g. ``100k steps, [64, 64]``."""
        hyperparams = next(iter(self.manifest["hyperparams"][env].values()))
        steps = int(self.report["envs"][env]["training_steps"])
        net_arch = _net_arch(str(hyperparams.get("policy_kwargs", "")))
        return f"{_steps(steps)} steps, {net_arch}"

    def seeds(self, env: str) -> str:
        """The seed pairs of ``env``'s primary comparisons: ``10``, or ``5-10`` while some have fewer than others."""
        counts = [entry["n"] for entry in self.primary(env)["variants"].values()] or [0]
        return str(max(counts)) if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"


def _net_arch(policy_kwargs: str) -> str:
    """The ``net_arch`` of a zoo-style ``policy_kwargs`` string, or SB3's TD3 default."""
    start = policy_kwargs.find("net_arch=")
    if start < 0:
        return "[400, 300]"
    end = policy_kwargs.find("]", start)
    return policy_kwargs[start + len("net_arch=") : end + 1]


def _steps(steps: int) -> str:
    return f"{steps // 1_000_000}M" if steps % 1_000_000 == 0 else f"{steps // 1000}k" if steps % 1000 == 0 else str(steps)


def _num(value: float) -> str:
    return f"{value:,.1f}"


def _effect(entry: dict[str, Any]) -> str:
    low, high = entry["ci"]
    return f"{_num(entry['effect'])} [{_num(low)}, {_num(high)}]"


def _seeds_needed(entry: dict[str, Any]) -> str:
    needed = entry.get("seeds_needed")
    return "more than 1,000 seeds" if needed is None else f"{needed:,} seeds"


def verdict_cell(entry: dict[str, Any] | None) -> str:
    """One comparison as a table cell: verdict, effect and CI, and the seeds that would resolve it."""
    if entry is None:
        return "not run"
    if entry.get("reason"):
        return f"not tested ({entry['reason']})"
    cell = f"{entry['verdict']}: {_effect(entry)}"
    if entry["verdict"] == "differs":
        return f"**{cell}**"
    if entry["verdict"] == "unresolved":
        return f"{cell}; {_seeds_needed(entry)}"
    return cell


def leave_one_out_envs(studies: Sequence[StudyReport]) -> list[tuple[StudyReport, str]]:
    """Each env that some study compares every component's removal on, with the first such study."""
    seen: dict[str, StudyReport] = {}
    for study in studies:
        for env in study.report["envs"]:
            variants = study.primary(env)["variants"]
            if env not in seen and all(switch.variant in variants for switch in TABLE):
                seen[env] = study
    return [(study, env) for env, study in seen.items()]


def component_table(studies: Sequence[StudyReport]) -> list[str]:
    """The verdict of every component's removal on every leave-one-out task (primary outcome)."""
    columns = leave_one_out_envs(studies)
    if not columns:
        return []
    head = ["component removed"] + [f"{env} ({study.budget(env)}, {study.seeds(env)} seeds)" for study, env in columns]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for switch in TABLE:
        cells = [verdict_cell(study.primary(env)["variants"].get(switch.variant)) for study, env in columns]
        lines.append(f"| ({switch.component}) {switch.name.replace('_', ' ')} | " + " | ".join(cells) + " |")
    margins = "; ".join(f"{env} ±{_num(study.primary(env)['margin'])}" for study, env in columns)
    names = {study.primary(env)["name"] for study, env in columns}
    alphas = {study.report["plan"]["alpha"] for study, _ in columns}
    return [
        f"Primary outcome: {' / '.join(sorted(names))}. Each cell: the verdict, the effect of removing the component "
        "(variant - TD3) with its 95% t-interval over seed pairs, and for `unresolved` the seeds that would detect "
        f"an effect of the observed size at 80% power. Verdicts: paired t-test, Holm over the 6 comparisons of a "
        f"task, alpha = {', '.join(map(str, sorted(alphas)))}; `equivalent`: TOST within the task's margin "
        f"({margins}), Holm.",
        "",
        *lines,
    ]


def _effect_label(name: str) -> str:
    if " x " in name:
        return " x ".join(part.replace("_", " ") for part in name.split(" x "))
    return f"removing {name.replace('_', ' ')}"


def factorial_lines(studies: Sequence[StudyReport]) -> list[str]:
    """The effects of every factorial design that differ, per outcome, and what stays unresolved."""
    lines: list[str] = []
    for study in studies:
        plan = study.report["plan"]
        outcomes_order = [plan["primary"], *plan["secondary"]]
        for title, section in study.report.get("sections", {}).items():
            if "switches" not in section:
                continue
            env = section.get("env") or title.split(":")[0]
            primary = section["outcomes"].get(plan["primary"])
            if not primary:
                continue
            seeds = len(primary["seeds"])
            effects = primary["effects"]
            k = len(section["switches"])
            lines.append(
                f"- **{env}**, 2^{k} factorial over {', '.join(s.replace('_', ' ') for s in section['switches'])} "
                f"({study.name}, {study.budget(env)}, {seeds} complete seeds; per-seed contrasts, t-test over seeds, "
                f"Holm over the {len(effects)} main effects and interactions of each outcome):"
            )
            for outcome in outcomes_order:
                result = section["outcomes"].get(outcome)
                if not result:
                    continue
                name = study.report["envs"][env]["outcomes"][outcome]["name"]
                differs = [
                    f"{_effect_label(effect)} {_effect(entry)} (Holm p {entry['p_adjusted']:.2g})"
                    for effect, entry in result["effects"].items()
                    if entry["verdict"] == "differs"
                ]
                unresolved = [entry for entry in result["effects"].values() if entry["verdict"] == "unresolved"]
                equivalent = [effect for effect, entry in result["effects"].items() if entry["verdict"] == "equivalent"]
                text = f"differs: {'; '.join(differs)}" if differs else "nothing differs"
                if equivalent:
                    text += f"; equivalent: {', '.join(_effect_label(e) for e in equivalent)}"
                if unresolved:
                    text += f"; {len(unresolved)} of {len(result['effects'])} unresolved"
                lines.append(f"  - {name}: {text}.")
    return lines


def _paper_task(env: str) -> str | None:
    task = env.split("-v")[0]
    return task if task in PAPER_TABLE2 else None


def budget_lines(studies: Sequence[StudyReport]) -> list[str]:
    """Each task's budget beside the TD3 paper's, and the paper's Table 2 effects beside ours where it has them."""
    paper = f"{_steps(PAPER_STEPS)} steps, {PAPER_NET_ARCH}, {PAPER_SEEDS} seeds"
    lines = [f"- The TD3 paper's ablation (Table 2): {paper}, on MuJoCo tasks. Here:"]
    for study, env in leave_one_out_envs(studies):
        baseline = study.primary(env).get("baseline")
        reached = f"; TD3 reaches {_num(baseline['mean'])} (mean over {baseline['n']} seeds)" if baseline else ""
        lines.append(f"  - {env}: {study.budget(env)}, {study.seeds(env)} seeds{reached}.")
        task = _paper_task(env)
        if task is None:
            continue
        table = PAPER_TABLE2[task]
        ours = study.primary(env)["variants"]
        pairs = [
            paper_comparison(variant, score - table["td3"], ours[variant])
            for variant, score in table.items()
            if variant != "td3" and variant in ours
        ]
        steps = _steps(int(study.report["envs"][env]["training_steps"]))
        lines.append(
            f"    The paper's TD3 scores {_num(table['td3'])} on {task} at 1M steps. The effect of removing each of "
            f"TD3's additions, the paper's at 1M steps (no CI given) beside ours at {steps} steps (95% CI): "
            f"{'; '.join(pairs)}."
        )
    lines.append(
        "- So a verdict here is about what a component does within these budgets: none of them confirms or "
        "contradicts the paper's effects at 1M steps, where learning has gone further, with larger networks. "
        "An `unresolved` comparison says how many seeds would settle it at this budget, "
        "not what happens at 1M steps."
    )
    return lines


def paper_comparison(variant: str, paper_effect: float, ours: dict[str, Any]) -> str:
    """The paper's effect of removing a component beside ours, and whether ours excludes the paper's value."""
    low, high = ours["ci"]
    where = "inside our CI" if low <= paper_effect <= high else "outside our CI"
    name = variant.removeprefix("no_").replace("_", " ")
    return f"{name}: paper {_num(paper_effect)} ({where}), here {ours['verdict']} {_effect(ours)}"


def answer_markdown(studies: Sequence[StudyReport]) -> str:
    """The whole answer (markdown), from the given studies in order (a task's first leave-one-out study is used)."""
    parts = [
        "**Per task and component.**",
        "",
        *component_table(studies),
    ]
    factorial = factorial_lines(studies)
    if factorial:
        parts += ["", "**Interactions (factorial designs).**", "", *factorial]
    parts += ["", "**What the budgets allow.**", "", *budget_lines(studies)]
    return "\n".join(parts) + "\n"
