"""The report's account of its analysis plan: what was declared, when, and every deviation from it; the banners at
the top of a report (:func:`plan_banner`: a plan fixed after runs, records not made under the plan, runs reused from
other studies, batched records that cannot be reproduced one by one, amendments made after runs) and the same facts as
JSON (:func:`plan_provenance_json`)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from sb3_ablation.common.utils import plural
from sb3_ablation.study.analyse.paired_tests import TEST_NAMES
from sb3_ablation.study.analyse.provenance import (
    BEFORE_DIGESTS,
    COPIED,
    EARLIER_VERSION,
    GROUP_INVARIANT_SINCE,
    OTHER_PLAN,
    REPRODUCED,
)
from sb3_ablation.study.analyse.statistics import MIN_RUNS
from sb3_ablation.study.plan.analysis_plan import DEFAULT_CLAIMS, AnalysisPlan, LearningRules
from sb3_ablation.study.render.status import seed_ranges
from sb3_ablation.study.render.tables import margin_text

if TYPE_CHECKING:
    from sb3_ablation.study.analyse.provenance import Provenance, ReusedRun, RunKey
    from sb3_ablation.study.analyse.report_model import ReportModel
    from sb3_ablation.study.analyse.results import StudyData

#: the words of a banner for runs shared with another study, by how they are shared
REUSE_WORDS = {
    COPIED: "the same record files, copied",
    REPRODUCED: "run again with the same settings and seeds, with bit-identical results: no evidence independent of "
    "that study's",
    None: "declared in study.json",
}
#: variants named in a list of runs before the rest are counted
SHOWN_VARIANTS = 4


def runs_text(runs: list[RunKey]) -> str:
    """Runs in a few words: per env and set of seeds, the variants (``Pendulum-v1 td3, ddpg (seeds 0-4)``)."""
    by_variant: dict[tuple[str, str], set[int]] = defaultdict(set)
    for env, variant, seed in runs:
        by_variant[(env, variant)].add(seed)
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (env, variant), seeds in by_variant.items():
        groups[(env, seed_ranges(seeds))].append(variant)
    parts = []
    for (env, ranges), variants in groups.items():
        shown = ", ".join(variants[:SHOWN_VARIANTS])
        more = f" and {len(variants) - SHOWN_VARIANTS} more variants" if len(variants) > SHOWN_VARIANTS else ""
        parts.append(f"{env} {shown}{more} (seeds {ranges})")
    return "; ".join(parts)


def plan_banner(model: ReportModel) -> list[str]:
    """
    The warnings at the top of a report (empty when there is nothing to warn of): a plan fixed after runs had finished
    (or its history, where the manifest notes it), records not made under the plan, runs reused from other studies,
    batched records whose group set their random streams, and amendments made after runs.
    """
    lines = _declared_banner(model)
    for text in (*_provenance_banners(model), *_amendment_banners(model)):
        lines += [f"> {text}", ""]
    return lines


def _declared_banner(model: ReportModel) -> list[str]:
    declared = model.declared_at or {}
    finished = declared.get("finished_runs")
    note = declared.get("note", "")
    if model.declared is not None and finished == 0:
        return [f"> **Plan history:** {note[:1].upper() + note[1:]}.", ""] if note else []
    when = declared.get("at", "an unknown date")
    return [
        f"> **This study's analysis plan was fixed after {plural(finished, 'run') if finished else 'its runs'} had "
        f"finished** ({when}{'; ' + note if note else ''}). "
        "Its verdicts are a re-analysis under a plan chosen with the results known, not a confirmatory test.",
        "",
    ]


def _provenance_banners(model: ReportModel) -> list[str]:
    provenance = model.provenance
    if provenance is None or not provenance.records:
        return []
    total = len(provenance.records)
    texts = []
    if provenance.verified is False:
        texts.append(
            "**The plan's digest in study.json does not match its plan and design**: the plan or design was edited "
            "after it was declared, outside the study command."
        )
    missing = provenance.runs(BEFORE_DIGESTS)
    if missing and provenance.digest is not None:
        if len(missing) == total:
            which = f"None of the {total} records carries a plan digest"
        else:
            which = f"{len(missing)} of the {total} records {'carries' if len(missing) == 1 else 'carry'} no plan digest"
        texts.append(
            f"**{which}**: written before the package wrote digests, they cannot be checked against the plan; the "
            "dates in study.json and the records are the only evidence of the order"
            + ("" if len(missing) == total else f" ({runs_text(missing)})")
            + "."
        )
    elif missing and len(missing) == total:
        texts.append(
            f"**Neither the plan nor any of the {total} records carries a digest**: both were written before the "
            "package wrote digests, so which plan the records were made under rests on the dates in study.json and the "
            "records, not on a digest."
        )
    for status, words in (
        (OTHER_PLAN, "made under another plan (a digest that is no version of this study's plan)"),
        (EARLIER_VERSION, "made under an earlier version of the plan (before an amendment)"),
    ):
        if runs := provenance.runs(status):
            texts.append(f"**{plural(len(runs), 'record')} {words}:** {runs_text(runs)}.")
    before = provenance.before_plan
    declared_after = bool((model.declared_at or {}).get("finished_runs"))
    if before and not (declared_after and len(before) == total):
        texts.append(f"**{plural(len(before), 'record')} finished before the plan was declared:** {runs_text(before)}.")
    texts += _reuse_banners(provenance)
    if runs := provenance.group_dependent:
        texts.append(
            "**These records cannot be reproduced record by record: their batched group set their random streams.** "
            f"{len(runs)} of the {total} records were trained by the batched engine before each agent drew from its "
            f"own random streams (the group-invariant engine, {GROUP_INVARIANT_SINCE[:10]}): their streams depend on their "
            "group, so a run trained alone or in another group is not the same run; only its whole group, rerun as it "
            "was, can reproduce it."
        )
    if resumed := provenance.resumed:
        count = sum(len(runs) for runs in resumed.values())
        where = "; ".join(f"at step {step:,}: {runs_text(runs)}" for step, runs in resumed.items())
        texts.append(
            f"**{plural(count, 'run')} resumed from a checkpoint** (after a stop; the package's resume tests show a "
            f"resumed run's record equal to an unbroken run's): {where}."
        )
    return texts


def _reuse_banners(provenance: Provenance) -> list[str]:
    by_source: dict[tuple[str, str | None], list[ReusedRun]] = defaultdict(list)
    for run in provenance.reused:
        by_source[(run.source, run.how)].append(run)
    texts = []
    for (source, how), runs in by_source.items():
        notes = "; ".join(dict.fromkeys(run.note for run in runs if run.note))
        notes = notes[:1].upper() + notes[1:]
        texts.append(
            f"**{plural(len(runs), 'run')} reused from `{source}`** ({REUSE_WORDS.get(how, how)}): "
            f"{runs_text([run.run for run in runs])}.{' ' + notes + '.' if notes else ''} Their records' SHA-256 "
            "digests are in report.json (`provenance.reused`)."
        )
    return texts


def _amendment_banners(model: ReportModel) -> list[str]:
    return [
        f"**The plan was amended after {plural(version.finished_runs or 0, 'run')} had finished** "
        f"({version.at or 'an unknown date'}: {version.reason or 'no reason given'}). This report follows the plan in "
        'force; the section "Plan amended after runs: verdicts side by side" gives the verdicts under the plan as '
        "first declared too."
        for version in model.plan_versions[1:]
        if version.finished_runs
    ]


def plan_provenance_json(model: ReportModel) -> dict[str, Any]:
    """
    The facts of the banners as JSON, for report.json's ``provenance``: the digest the records are checked against,
    whether study.json's digests verify, the records without the plan's digest, under another plan or an earlier
    version, finished before the plan, the runs reused from other studies (with their records' SHA-256), the batched
    records whose group set their random streams, whether the learning rules were declared, and the banners' text.
    """
    provenance = model.provenance
    rules = model.plan.learning
    facts: dict[str, Any] = {
        "learning_rules": {
            "declared": rules is not None,
            "rules": (rules or LearningRules()).to_dict(),
        },
        "banners": [line[2:] for line in plan_banner(model) if line.startswith("> ")],
    }
    if provenance is None:
        return facts

    def keys(runs: list[RunKey]) -> list[list[Any]]:
        return [list(run) for run in runs]

    return {
        **facts,
        "digest": provenance.digest,
        "verified": provenance.verified,
        "versions": list(provenance.versions),
        "records": len(provenance.records),
        "without_digest": keys(provenance.runs(BEFORE_DIGESTS)),
        "other_plan": keys(provenance.runs(OTHER_PLAN)),
        "earlier_version": keys(provenance.runs(EARLIER_VERSION)),
        "before_plan": keys(provenance.before_plan),
        "resumed": [[*run, step] for step, runs in provenance.resumed.items() for run in runs],
        "source_digests": {digest or "none": count for digest, count in provenance.source_digests.items()},
        "reused": [
            {
                "run": list(run.run),
                "source": run.source,
                "how": run.how,
                "declared": run.declared,
                "record_digest": run.digest,
                "note": run.note or None,
            }
            for run in provenance.reused
        ],
        "group_dependent": keys(provenance.group_dependent),
    }


def _provenance_text(declared: dict) -> str:
    """Where the declared plan can be checked: its digest, and the study file's git commit when it was declared."""
    text = f" Plan digest (SHA-256 of the design and plan): `{declared['digest']}`." if declared.get("digest") else ""
    source = declared.get("study_file") or {}
    if source.get("commit"):
        state = "with uncommitted changes" if source.get("modified") else "unmodified"
        text += f" Declared from `{source['path']}` as committed in `{source['commit'][:12]}` ({state} then)."
    return text


def plan_section(model: ReportModel, data: StudyData) -> list[str]:
    plan = model.plan
    lines = ["## Analysis plan", ""]
    at = (model.declared_at or {}).get("at")
    if model.declared is None:
        changed = "; changed by the report's options: " + "; ".join(model.plan_changes) if model.plan_changes else ""
        lines.append(f"The study declared no analysis plan: the report uses the defaults below{changed}.")
    else:
        lines.append(
            f"The study declared its plan in `study.json`{f' on {at}' if at else ''}"
            + (
                "; **the plan used here deviates from it**: " + "; ".join(model.plan_changes) + "."
                if model.plan_changes
                else "; the report follows it."
            )
        )
    lines[-1] += _provenance_text(model.declared_at or {})
    latest = data.manifest.get("config", {}).get("analysis")
    if model.declared is not None and latest:
        given = AnalysisPlan.from_dict(latest)
        if given.learning is None and model.declared.learning is not None:
            # an invocation that leaves the learning rules out gives their defaults (as the study command reads it)
            given = dataclasses.replace(given, learning=LearningRules())
        if given.claims is None and model.declared.claims is not None:
            given = dataclasses.replace(given, claims=DEFAULT_CLAIMS)  # likewise the claims rule
        if given != model.declared:
            lines[-1] += " A later invocation gave another plan: " + "; ".join(given.differences(model.declared)) + "."
    windows = ", ".join(f"{e.env} {plural(len(e.window), 'evaluation')} ({e.window[0]:,}-{e.window[-1]:,} of "
                        f"{e.training_steps:,} steps)" for e in model.envs if e.window)  # fmt: skip
    margins = "; ".join(f"{e.env} {margin_text(result.margin)}" for e in model.envs if (result := e.outcome(plan.primary)))
    no_equivalence = plan.claim_rule == "differs"
    earlier = [
        "- Hypotheses at an earlier budget of the same runs, in the primary outcome's family: "
        + "; ".join(f"{h.variant} at {h.budget:,} steps ({h.alternative})" for h in plan.earlier_budgets)
        + ": the primary outcome from each run's evaluations up to that budget, as if the run had ended there."
    ][: bool(plan.earlier_budgets)]
    names = {o.outcome.key: o.outcome for e in model.envs for o in e.outcomes}
    secondary = "; ".join(f"{names[k].name} ({names[k].definition})" for k in plan.secondary if k in names)
    primary = names.get(plan.primary)
    seeds = f"the confirmatory seeds {', '.join(map(str, plan.seeds))}" if plan.seeds else "every finished seed"
    design = (
        f"group-sequential, looks at {', '.join(map(str, plan.looks))} seeds, {plan.boundary} alpha spending"
        if plan.looks
        else "fixed: one analysis at the planned seeds"
    )
    lines += [
        "",
        f"- Primary outcome: **{primary.name if primary else plan.primary}** "
        f"({primary.definition if primary else ''}); per env: {windows or 'no runs'}.",
        f"- Secondary outcomes: {secondary or 'none'}.",
        f"- Test: {TEST_NAMES[plan.test]} on the per-seed differences, two-sided, on {seeds}; "
        + (
            "no equivalence test (claims: differs)"
            if no_equivalence
            else f"equivalence: two one-sided tests with the {TEST_NAMES[plan.equivalence_test]}"
        )
        + f"; at least {MIN_RUNS} seed pairs for any test. Design: {design}.",
        f"- Families: one per env and outcome (every variant against {model.baseline}), and one for the aggregate "
        f"across envs. {model.guarantee}",
        *earlier,
        "- Equivalence margin: none planned (claims: differs: the plan makes no equivalence claims)."
        if no_equivalence
        else f"- Equivalence margin ±δ of the primary outcome, per env: {margins or 'none'}. Secondary return outcomes "
        f"use the same margin; overestimation: {plan.reference_fraction:.0%} of the task's reference span in "
        "discounted value per state. Margins are fixed by the plan and the task's references, never by the compared "
        "runs.",
        f"- Failure outcome: a run did not learn when its final-window return is below "
        f"{plan.failure_fraction:.0%} of the reference span above the random policy (or the plan's declared return); "
        f"a critic diverged when its overestimation is not finite or beyond {plan.divergence_factor:g}x the value span. "
        "The report counts failures by the learning rules below wherever it applies them, so that one definition of "
        "a failed run holds in every table.",
        f"- Power {plan.power:.0%} for the minimum detectable effect and the seeds needed.",
        _learning_line(plan),
        "",
    ]
    return lines


def _learning_line(plan: AnalysisPlan) -> str:
    """Where TD3 learns: the plan's rules, or the package's defaults where the plan declares none."""
    rules = plan.learning or LearningRules()
    whose = "declared in the plan" if plan.learning is not None else "the package's defaults, not declared before these runs"
    return (
        f"- Where TD3 learns (learning rules: {whose}): a run did not learn below the measured random return plus "
        f"{rules.learning_fraction:.0%} of the span to the paper-budget reference; a critic diverged beyond "
        f"{rules.q_bound_factor:g}x max |reward| / (1 - gamma); a component makes learning possible when the cells "
        f"without it fail at a pooled rate of at least {rules.region_failure_rate:.0%}; a task is at its ceiling within "
        f"{rules.ceiling_fraction:.0%} of the span below the reference."
    )
