"""The README's answer to the exercise, generated from the committed studies' report.json files.

Writes the block between ``<!-- answer:start -->`` and ``<!-- answer:end -->`` in README.md; ``--check`` fails (exit 1)
when the committed block differs from a fresh generation (tests/docs/test_readme_answer.py runs it). The library knows
neither README nor the repository's study folders: this script does.

    python tools/readme_answer.py          # rewrite the block
    python tools/readme_answer.py --check  # compare only
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from sb3_ablation.study.plan.designs import roman
from sb3_ablation.study.plan.learning_rules import random_return as measured_random

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "docs" / "studies"
START, END = "<!-- answer:start -->", "<!-- answer:end -->"
# the committed studies the answer reads: (folder, env, column title)
LEAVE_ONE_OUT = (
    ("pendulum", "Pendulum-v1", "Pendulum-v1, 20k"),
    ("multitask", "Hopper-v5", "Hopper-v5, 100k"),
    ("multitask", "HalfCheetah-v5", "HalfCheetah-v5, 100k"),
    ("multitask", "LunarLanderContinuous-v3", "LunarLander, 200k"),
)
FACTORIALS = (("pendulum-2x6", "Pendulum-v1"), ("hopper-half-fraction", "Hopper-v5"))
SEQUENTIAL = ("pendulum-sequential", "Pendulum-v1")
#: the report section of a plan amended after runs (sb3_ablation/study/render/amendments.py)
AMENDED_TITLE = "Plan amended after runs: verdicts side by side"
TUNED = ("pendulum-tuned", "Pendulum-v1", "Removed with TD3's hyperparameters, and with its own")
# the TD3 paper's question where TD3 learns: (folder, env, the paper's task name in tools/td3_paper_table2.yml)
PAPER_300K = ("hopper-paper-300k", "Hopper-v5", "Hopper")
TABLE2 = ROOT / "tools" / "td3_paper_table2.yml"
SWITCHES = (
    "deterministic_policy",
    "replay_buffer",
    "target_networks",
    "target_policy_smoothing",
    "delayed_policy_update",
    "clipped_double_q",
)


def report(folder: str) -> dict:
    return json.loads((STUDIES / folder / "report.json").read_text())


def cell(entry: dict | None) -> str:
    if entry is None:
        return "—"
    effect = entry["effect"]
    value = "n/a" if effect is None else f"{effect:+,.0f}"
    verdict = entry["verdict"]
    return f"**{verdict}** {value}" if verdict != "unresolved" else f"unresolved {value}"


def leave_one_out_table() -> list[str]:
    header = "| component removed | " + " | ".join(title for _, _, title in LEAVE_ONE_OUT) + " |"
    lines = [header, "|---|" + "---:|" * len(LEAVE_ONE_OUT)]
    reports = {folder: report(folder) for folder, _, _ in LEAVE_ONE_OUT}
    for switch in SWITCHES:
        cells = []
        for folder, env, _ in LEAVE_ONE_OUT:
            variants = reports[folder]["envs"][env]["outcomes"]["final_window"]["variants"]
            cells.append(cell(variants.get(f"no_{switch}")))
        lines.append(f"| {switch} | " + " | ".join(cells) + " |")
    return lines


def plan_history(study: dict) -> str:
    """
    The plan's history in the words of the report's banners (render/plan.py): fixed after runs had finished (then not
    a confirmatory test), runs reused from other studies, and amendments made after runs.
    """
    finished = (study["plan_declared"] or {}).get("finished_runs")
    reused = len((study.get("provenance") or {}).get("reused") or [])
    if finished is None:
        text = "plan fixed after the runs, not a confirmatory test"
    elif finished:
        text = f"plan fixed after {finished} runs had finished (reused from an earlier study), not a confirmatory test"
    else:
        text = "plan declared before the first run"
        if reused:
            text += f", {reused} of whose runs reproduce an earlier study's, with their results known"
    amended = (study["sections"].get(AMENDED_TITLE) or {}).get("versions", [])[1:]
    for version in amended:
        if version["finished_runs"]:
            text += (
                f"; amended after {version['finished_runs']} runs ({'; '.join(version['changes'])}), the verdicts under "
                "both plans in its report"
            )
    return text


def factorial_lines(folder: str, env: str) -> list[str]:
    """A factorial design's effects: the full 2^k, or a regular fraction with its alias structure named."""
    if not (STUDIES / folder / "report.json").exists():
        return []
    study = report(folder)
    factorial = study["sections"][f"{env}: factorial analysis"]
    section = factorial["outcomes"]["final_window"]
    steps = study["envs"][env]["training_steps"]
    declared = plan_history(study)
    seeds, relation = len(section["seeds"]), factorial["design"]["defining_relation"]
    factors = len(factorial["design"]["factors"])
    cells = 2**factors // 2 ** len(relation)
    title, details = f"All 2^{factors} = {cells} combinations on {env}", []
    if relation:
        resolution = factorial["resolution"]
        title = f"The {cells}-cell fraction on {env}"
        details.append(
            f"I = {' = '.join(relation)}, resolution {roman(resolution)}: each main effect is aliased with interactions "
            f"of {resolution - 1} or more factors, each two-factor interaction with ones of {resolution - 2} or more, "
            "and the estimates below include them"
        )
    details += [
        f"{seeds} seeds per cell, {cells * seeds} runs of {steps // 1000}k steps",
        "effects on the Yates scale, a component's mean with it on minus with it removed over every combination of the others",
        "Wilcoxon on the per-seed effects, one family-wise alpha = 0.05 per family",
        declared,
    ]
    main = [f"{name} {cell(e)}" for name, e in section["main_effects"].items()]
    interactions = [f"{name} {cell(e)}" for name, e in section["interactions"].items() if e["verdict"] != "unresolved"]
    keep = section["smallest_sufficient_set"]
    lines = [
        "",
        f"**{title}** ({'; '.join(details)}):",
        "",
        "- main effects: " + "; ".join(main) + ".",
        "- two-factor interactions with a verdict: " + ("; ".join(interactions) or "none") + " (the other "
        f"{len(section['interactions']) - len(interactions)} unresolved).",
    ]
    if keep:
        margin = section["margin"]
        observed = keep["observed_set"]
        if keep["confirmed"] is None:
            check = "its cell is not one the design ran"
        else:
            check = (
                f"{'confirmed' if keep['confirmed'] else 'not confirmed'} on the design's own cell: observed loss "
                f"{keep['observed_drop']:,.1f}"
            )
        if observed is not None and not keep["confirmed"]:
            check += (
                f"; on the cells run, the fewest kept within the margin: **{', '.join(observed['keep']) or 'none'}**, "
                f"observed loss {observed['observed_drop']:,.1f}"
            )
        lines.append(
            f"- smallest set of components to keep within the margin of {margin:,.1f} (a description, not a test): "
            f"**{', '.join(keep['keep']) or 'none'}** (model-predicted loss {keep['predicted_drop']:,.1f}; {check})."
        )
    return lines


def sequential_lines() -> list[str]:
    """The confirmatory group-sequential replication, once its report is committed."""
    folder, env = SEQUENTIAL
    if not (STUDIES / folder / "report.json").exists():
        return []
    study = report(folder)
    outcome = study["envs"][env]["outcomes"]["final_window"]
    looks, variants = outcome["sequential"], outcome["variants"]
    # where git shows the plan and the first runs in one commit, only the package's timestamps give the order
    when = "by the package's own timestamps" if (study["plan_declared"] or {}).get("note") else ""
    order = looks["seed_order"]
    groups: dict[tuple[int, str], list[str]] = {}
    last = len(looks["looks"]) - 1
    for variant, decision in looks["decisions"].items():
        if decision["verdict"] == "open":
            where = (last + 1, "still open (runs missing)")
        elif decision["look"] is not None:
            n = looks["looks"][decision["look"]]
            where = (decision["look"], f"decided at look {decision['look'] + 1} ({n} seeds)")
        else:
            where = (last, f"unresolved at the last look ({looks['looks'][-1]} seeds)")
        groups.setdefault(where, []).append(f"{variant.removeprefix('no_')} {cell(variants.get(variant))}")
    return [
        "",
        f"**A confirmatory replication on {env}** (seeds {order[0]}-{order[-1]}, which the table's Pendulum study "
        f"never used; plan, margin and looks at {' and '.join(map(str, looks['looks']))} seeds declared before the first "
        f"run{' ' + when if when else ''}, "
        f"{looks['boundary']} alpha spending, one family-wise alpha = 0.05 over all looks; the next block of seeds "
        "only for comparisons still open; component removed, verdict and estimate):",
        "",
        *(f"- {where}: " + "; ".join(items) + "." for (_, where), items in sorted(groups.items())),
    ]


def tuned_lines() -> list[str]:
    """Each component removed with TD3's hyperparameters and with its own, once the tuned study's report is committed."""
    folder, env, title = TUNED
    if not (STUDIES / folder / "report.json").exists():
        return []
    section = report(folder)["sections"][title]
    tuning = section["tuning"]
    rows = []
    for row in section["envs"][env]["comparisons"]:
        recovered = "" if row["recovered"] is None else f", {row['recovered']:.0%} of the effect recovered"
        rows.append(
            f"{row['variant'].removeprefix('no_')}: {cell(row['default'])} with TD3's, {cell(row['own'])} with its own"
            + recovered
        )
    return [
        "",
        f"**Every variant re-tuned for itself on {env}** ({tuning['n_trials']} Optuna trials x "
        f"{len(tuning['seeds'])} tuning seeds per variant over {', '.join(tuning['search_space'])}, then confirmatory "
        "seeds tuning never saw, each variant against TD3 with its own tuned hyperparameters; plan declared before "
        "the first trial; component removed, verdict and estimate):",
        "",
        *(f"- {line}." for line in rows),
    ]


def paper_lines() -> list[str]:
    """The TD3 paper's "TD3 - X" rows beside the 300k-step study's estimates, once its report is committed."""
    folder, env, task = PAPER_300K
    if not (STUDIES / folder / "report.json").exists():
        return []
    table = yaml.safe_load(TABLE2.read_text())
    paper = {row["variant"]: row[task] for row in table["rows"] if row.get("variant")}
    study = report(folder)
    outcome = study["envs"][env]["outcomes"]["final_window"]
    td3, looks = outcome["baseline"], outcome.get("sequential") or {}
    reached = looks.get("looks", [])[: looks.get("reached", 0)]
    random_return = measured_random(env)[0]  # the package's own measurement (references.yml), as the plan declared
    progress = (td3["mean"] - random_return) / (paper["td3"] - random_return)
    lines = [
        "",
        f"**The TD3 paper's question on {env} at {study['envs'][env]['training_steps'] // 1000}k steps** (the paper's "
        f"hyperparameters with [64, 64] networks; {td3['n']} TD3 seeds at look {len(reached)} of "
        f"{len(looks.get('looks', [])) or 1}; margin {outcome['margin']:,.1f} and failure threshold declared from a "
        "pilot, plan committed before the first run; Wilcoxon signed-rank, Hodges-Lehmann estimate and 95% interval; "
        f"TD3's final-window mean {td3['mean']:,.1f}, {progress:.0%} of the way from the random policy to the paper's "
        f"TD3 at 1M steps, {paper['td3']:,.2f}; the paper's rows at 1M steps beside):",
        "",
    ]
    for variant, entry in outcome["variants"].items():
        if variant not in paper:
            continue
        paper_effect = paper[variant] - paper["td3"]
        verdict = (looks.get("decisions") or {}).get(variant, {}).get("verdict", entry["verdict"])
        if verdict == "differs":
            agrees = (entry["effect"] < 0) == (paper_effect < 0)
            reading = "the paper's direction reproduced" if agrees else "**against the paper's direction**"
        elif verdict == "equivalent":
            reading = "the paper's effect not seen at this budget"
        else:
            reading = "open until the design's next look" if verdict == "open" else "not resolved"
            if entry.get("seeds_needed"):
                reading += f" (about {entry['seeds_needed']} seed pairs for 80% power at this effect)"
        low, high = entry["ci"] if entry.get("ci") else (None, None)
        interval = f" [{low:+,.0f}, {high:+,.0f}]" if low is not None else ""
        lines.append(
            f"- {variant.removeprefix('no_')} removed: **{verdict}** {entry['effect']:+,.0f}{interval}; the paper: "
            f"{paper_effect:+,.0f} ({paper[variant]:,.2f} against {paper['td3']:,.2f}); {reading}."
        )
    return lines


def answer() -> str:
    lines = [
        "Primary outcome: the mean return over the final 10% of training. Cells: the verdict and the paired estimate "
        "(Hodges-Lehmann, return units) of removing the component from full TD3, 10 seed pairs per task, Wilcoxon "
        "signed-rank test for `differs`, the sign-flip TOST of the mean for `equivalent`, one family-wise alpha = "
        "0.05 per task. `unresolved` is not 'no effect'. Hopper, HalfCheetah and LunarLander have no published "
        "reference at these budgets, so no margin and no `equivalent` there. All plans of these leave-one-out "
        "studies were fixed after their runs (their reports say so).",
        "",
        *leave_one_out_table(),
        *(line for folder, env in FACTORIALS for line in factorial_lines(folder, env)),
        *sequential_lines(),
        *tuned_lines(),
        *paper_lines(),
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare README's block with a fresh generation")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = parser.parse_args()
    text = args.readme.read_text()
    if START not in text or END not in text:
        print(f"{args.readme}: no {START} ... {END} markers", file=sys.stderr)
        return 1
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    new = f"{before}{START}\n{answer()}{END}{after}"
    if args.check:
        if new != text:
            print(f"{args.readme}: the answer block is not the one the committed reports give; run tools/readme_answer.py")
            return 1
        return 0
    args.readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
