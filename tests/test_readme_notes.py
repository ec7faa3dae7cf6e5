"""README's hand-written readings of the committed studies (the Pendulum studies' readings and the three-task
study's per-task notes), checked against the run records of the seeds they speak of: each number is recomputed from
the records and must be the one README prints, and each qualitative claim must hold in those records. The generated
blocks beside them are checked by tests/test_findings.py."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from sb3_ablation.study.analyse.analysis import build_model, run_outcome
from sb3_ablation.study.analyse.inference import Comparison
from sb3_ablation.study.analyse.results import RunCurves, StudyData, load_study
from sb3_ablation.study.plan.analysis_plan import AnalysisPlan
from sb3_ablation.study.render.answer import PAPER_TABLE2
from sb3_ablation.study.store.manifest import planned_runs
from sb3_ablation.study.store.runs import read_run, run_path

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "docs" / "studies"
STUDY = STUDIES / "multitask"
SEEDS = (0, 1, 2, 3, 4)
LATER_SEEDS = (5, 6, 7, 8, 9)
TSC = ("no_target_policy_smoothing", "no_delayed_policy_update", "no_clipped_double_q")  # the TD3 paper's additions


def study_seeds(folder: Path, seeds=SEEDS) -> StudyData:
    """A committed study restricted to some of its seeds."""
    study = load_study(folder)
    runs = {
        env: {variant: [run for run in runs if run.seed in seeds] for variant, runs in variants.items()}
        for env, variants in study.runs.items()
    }
    return dataclasses.replace(study, runs=runs)


def readme_text(start: str, end: str) -> str:
    """README from ``start`` to ``end``, with its line breaks undone."""
    readme = (ROOT / "README.md").read_text()
    return " ".join(readme[readme.index(start) : readme.index(end)].split())


@pytest.fixture(scope="module")
def data() -> StudyData:
    """The three-task study's seeds the notes speak of."""
    return study_seeds(STUDY)


@pytest.fixture(scope="module")
def ten() -> StudyData:
    """The three-task study's seeds 0-9 (every variant's), which the study's introduction speaks of."""
    return study_seeds(STUDY, range(10))


@pytest.fixture(scope="module")
def later() -> StudyData:
    """The three-task study's seeds 5-9 (batched engine), which the notes' last paragraphs speak of."""
    return study_seeds(STUDY, LATER_SEEDS)


@pytest.fixture(scope="module")
def notes() -> str:
    return readme_text("What the verdicts leave out, per task", "#### Across the three tasks")


def returns(run: RunCurves) -> np.ndarray:
    return run.values["mean_return"]


def critic(run: RunCurves) -> tuple[np.ndarray, np.ndarray]:
    """``(timesteps, mean Q of critic 1 on replay batches)`` where recorded (training starts after step 0)."""
    timesteps, q = run.curve("q1_mean")
    recorded = np.isfinite(q)
    return timesteps[recorded], q[recorded]


def old_bias_at_end(run: RunCurves) -> float:
    """The old overestimation measure (cut at the time limit) at the last evaluation."""
    return float(run.values["bias"][-1])


def study_plan(data: StudyData) -> AnalysisPlan:
    """The plan a study declared (the default plan for a study made before plans)."""
    return AnalysisPlan.from_dict(data.manifest["analysis"]) if "analysis" in data.manifest else AnalysisPlan()


def verdicts(data: StudyData, env: str, outcome: str | None = None) -> dict[str, Comparison]:
    """An outcome's comparisons (default: the primary outcome's) on ``env`` from ``data``'s runs, under its plan."""
    plan = study_plan(data)
    model = build_model(dataclasses.replace(data, envs=[env]), plan, None, "td3", reps=100, seed=0)
    return next(o for o in model.envs[0].outcomes if o.outcome.key == outcome or (outcome is None and o.primary)).comparisons


def primary(data: StudyData, env: str, variant: str) -> dict[int, float]:
    """Each seed's primary outcome."""
    plan = study_plan(data)
    return {run.seed: run_outcome(run, plan.primary, plan) for run in data.runs[env][variant]}


def test_pendulum_reading():
    reading = readme_text("Reading: on Pendulum only experience replay", "### Three more tasks")
    data, first = study_seeds(STUDIES / "pendulum", range(10)), study_seeds(STUDIES / "pendulum")
    comparisons = verdicts(data, "Pendulum-v1")
    assert "only experience replay changes the return at the end of training" in reading
    assert [v for v, c in comparisons.items() if c.verdict == "differs"] == ["no_replay_buffer"]
    assert "Four of the other five components are shown equivalent to full TD3 within the margin" in reading
    assert sum(c.verdict == "equivalent" for c in comparisons.values()) == 4

    # target networks: unresolved with 10 seeds, equivalent with the first 5, two new seeds lost the task
    c = comparisons["no_target_networks"]
    assert c.verdict == "unresolved" and verdicts(first, "Pendulum-v1")["no_target_networks"].verdict == "equivalent"
    assert f"Target networks are unresolved at 10 seeds: the mean difference is about {c.effect:.0f} with a" in reading
    assert f"minimum detectable effect of about {c.mde:.0f}, and about {c.seeds_needed} seeds would be needed" in reading
    assert "(with 5 seeds the same comparison came out equivalent" in reading
    lost, td3 = primary(data, "Pendulum-v1", "no_target_networks"), primary(data, "Pendulum-v1", "td3")
    assert f"6 and 8, ended at {lost[6]:.0f} and {lost[8]:.0f} against TD3's {td3[6]:.0f} and {td3[8]:.0f})" in reading

    auc = verdicts(data, "Pendulum-v1", "auc")["no_delayed_policy_update"]
    assert auc.verdict == "differs" and f"the area under the learning curve is higher by about {auc.effect:.0f}" in reading

    # the critic (new measure: seeds 5-9 have it)
    over = verdicts(data, "Pendulum-v1", "overestimation")
    assert all(over[v].verdict == "differs" for v in ("no_replay_buffer", "no_target_networks", "no_clipped_double_q"))
    assert f"without the replay buffer it overestimates by about {round(over['no_replay_buffer'].effect, -1):.0f}" in reading
    assert f"without target networks it ends about {-over['no_target_networks'].effect:.0f} lower" in reading
    assert f"without clipped double Q about {over['no_clipped_double_q'].effect:.0f} higher" in reading

    # the Gaussian actor's std 3,000 updates after training starts (10k steps)
    assert "its std collapses to about 0.001 within 3,000 updates" in reading
    for run in data.runs["Pendulum-v1"]["no_deterministic_policy"]:
        timesteps, std = run.curve("actor_std")
        assert 0.0005 <= std[timesteps == 13_000][0] < 0.002


def test_batched_pendulum_reading():
    reading = readme_text("The same picture as the process study", "### Results: leave-one-out on Pendulum-v1")
    batched = verdicts(study_seeds(STUDIES / "pendulum-batched"), "Pendulum-v1")
    process = verdicts(study_seeds(STUDIES / "pendulum"), "Pendulum-v1")
    process_10 = verdicts(study_seeds(STUDIES / "pendulum", range(10)), "Pendulum-v1")
    margin = batched["no_target_networks"].margin
    assert batched["no_target_networks"].verdict == "differs" and process["no_target_networks"].verdict == "equivalent"
    assert (
        f"in the batched study (about {batched['no_target_networks'].effect:.0f}, within the ±{margin:.0f} margin)" in reading
    )
    assert f"in the same seeds 0-4 of the process study (about {process['no_target_networks'].effect:.0f})" in reading
    assert process_10["no_target_networks"].verdict == "unresolved"
    assert f"comparison became `unresolved` (about {process_10['no_target_networks'].effect:.0f}" in reading
    # the other verdicts agree between the engines
    assert all(batched[v].verdict == process[v].verdict for v in batched if v != "no_target_networks")


@pytest.mark.parametrize("env", ["Hopper-v5", "HalfCheetah-v5", "LunarLanderContinuous-v3"])
def test_each_task_note_names_the_runs_it_reads(data, notes, env):
    runs = sum(len(runs) for runs in data.runs[env].values())
    assert runs == 7 * len(SEEDS)
    assert f"{env}: " in notes and f"seeds 0-4 ({runs} runs)" in notes


def test_hopper_note(data, notes):
    hopper = data.runs["Hopper-v5"]
    td3 = hopper["td3"]
    start, finals = np.mean([returns(run)[0] for run in td3]), [returns(run)[-1] for run in td3]
    assert f"from {start:.0f} (the untrained policy at step 0, mean of the 5 seeds) to {min(finals):.0f}-" in notes
    assert f"-{max(finals):.0f} at the end, with peaks above 1,000" in notes
    assert max(returns(run).max() for run in td3) > 1000

    # without target networks the critic diverges early, then collapses below 0 with the policy
    peaks = [(q.max(), timesteps[q.argmax()]) for timesteps, q in map(critic, hopper["no_target_networks"])]
    low, high = min(q for q, _ in peaks), max(q for q, _ in peaks)
    assert f"peaks between {low / 1e5:.0f} x 10^5 and {high / 1e6:.1f} x 10^6 in every seed, within 15-30k" in notes
    assert all(15_000 <= timestep <= 30_000 for _, timestep in peaks)
    assert "while TD3's stays below 170, then collapses below 0, and the policy with it" in notes
    assert max(critic(run)[1].max() for run in td3) < 170
    assert all(critic(run)[1][-1] < 0 and returns(run)[-1] < start for run in hopper["no_target_networks"])

    # without experience replay no evaluation gets anywhere near a hopping Hopper (TD3's worst seed ends at 330)
    assert "Without **experience replay** Hopper never learns to hop" in notes
    assert max(returns(run).max() for run in hopper["no_replay_buffer"]) < min(finals) / 5

    assert "Without **clipped double Q** every seed's critic overestimates at the end (old measure)" in notes
    assert all(old_bias_at_end(run) > 0 for run in hopper["no_clipped_double_q"])
    comparison = verdicts(data, "Hopper-v5")["no_clipped_double_q"]
    assert "was `unresolved` with seeds 0-4, whose MDE at 100k steps was several times the observed difference" in notes
    assert comparison.verdict == "unresolved" and comparison.mde > 2 * abs(comparison.effect)

    # the Gaussian actor's std, starting at the exploration noise's, after 10k updates (training starts at 10k steps)
    assert "The Gaussian actor's std falls from TD3's 0.1 to below 0.01 within the first 10k updates" in notes
    for run in hopper["no_deterministic_policy"]:
        timesteps, std = run.curve("actor_std")
        assert std[timesteps == 20_000][0] < 0.01
    noise = {
        read_run(run_path(STUDY, "Hopper-v5", "no_deterministic_policy", seed))["hyperparams"]["noise_std"] for seed in SEEDS
    }
    assert noise == {0.1}


def test_halfcheetah_note(data, notes):
    cheetah = data.runs["HalfCheetah-v5"]
    td3 = cheetah["td3"]
    start, finals = np.mean([returns(run)[0] for run in td3]), [returns(run)[-1] for run in td3]
    assert f"from about {start:.0f} (the untrained policy at step 0) to {min(finals):,.0f}-{max(finals):,.0f}" in notes

    # without target networks: one seed diverged, seed 0 kept a positive return with Q near 0, the rest went negative
    ends = {run.seed: (critic(run)[1][-1], returns(run)[-1]) for run in cheetah["no_target_networks"]}
    diverged = [seed for seed, (q, _) in ends.items() if q > 1e9]
    assert len(diverged) == 1
    q, ret = ends[diverged[0]]
    assert f"one seed's critic diverged (mean Q on replay batches about {q / 1e9:.0f} x 10^9 at the end, " in notes
    assert f"return {ret:.0f}); seed 0 ended at +{ends[0][1]:,.0f} with Q near 0" in notes
    assert abs(ends[0][0]) < 0.1 * max(critic(run)[1].max() for run in td3)
    rest = [end for seed, end in ends.items() if seed not in (0, diverged[0])]
    assert "the other three ended with negative returns and Q below 0" in notes
    assert len(rest) == 3 and all(q < 0 and ret < 0 for q, ret in rest)

    # TD3 underestimates, and each of its three additions lowers the estimate
    assert "On this task TD3's critic underestimates (old measure)" in notes
    assert all(old_bias_at_end(run) < 0 for run in td3)
    assert "clipped double Q, delayed updates and target policy smoothing each push Q further down" in notes
    td3_bias = np.mean([old_bias_at_end(run) for run in td3])
    assert all(np.mean([old_bias_at_end(run) for run in cheetah[variant]]) > td3_bias for variant in TSC)

    # the paper's differences (within about 550 at 1M steps) lie below what 5 seeds could detect here
    assert "The return effects of the four TD3-specific components were `unresolved` with seeds 0-4" in notes
    assert "within about 550 of TD3 at 1M steps, far below the MDEs of those 5 seeds" in notes
    comparisons = verdicts(data, "HalfCheetah-v5")
    for variant in ("no_deterministic_policy", *TSC):
        assert comparisons[variant].verdict == "unresolved" and comparisons[variant].mde > 550


def test_lunarlander_note(data, notes):
    lander = data.runs["LunarLanderContinuous-v3"]
    td3 = lander["td3"]
    start = np.mean([returns(run)[0] for run in td3])
    later = np.mean([returns(run)[run.timesteps >= 100_000] for run in td3])
    assert f"the untrained policy scores about {start:.0f} (TD3's step-0 evaluations), TD3 about {later:.0f}" in notes
    best = max(returns(run).max() for run in td3)
    assert f"No evaluation of TD3 (the mean of 10 episodes) reached 150 (best {best:.1f})" in notes and best < 150
    floor = min(max(max(episodes) for episodes in run.episode_returns) for run in td3)
    assert f"every seed had single evaluation episodes of {int(floor)} or more" in notes

    assert "none of the six return comparisons was resolved with seeds 0-4" in notes
    assert {c.verdict for c in verdicts(data, "LunarLanderContinuous-v3").values()} == {"unresolved"}
    assert "Without clipped double Q every one of seeds 0-4 overestimated at the end (old measure)" in notes
    assert all(old_bias_at_end(run) > 0 for run in lander["no_clipped_double_q"])


def test_study_intro_on_lunarlander_landings(ten):
    intro = readme_text("### Three more tasks", "What the verdicts leave out, per task")
    td3 = ten.runs["LunarLanderContinuous-v3"]["td3"]
    assert len(td3) == 10
    assert (
        "lands reliably in only one of its 10 seeds: one seed's evaluations (the mean of 10 episodes) reached 150, " in intro
    )
    assert "the other nine's never did" in intro
    assert sum(returns(run).max() >= 150 for run in td3) == 1


def test_later_seeds_hopper(later, notes):
    hopper = later.runs["Hopper-v5"]
    assert sum(len(runs) for runs in hopper.values()) == 35 and "Seeds 5-9 (batched engine, 35 runs) show the same" in notes
    finals = [returns(run)[-1] for run in hopper["td3"]]
    assert f"TD3 ends at {min(finals):.0f}-{max(finals):.0f}." in notes

    # four critics diverge early and collapse with the policy; seed 6 diverges later and stays diverged
    early = {run.seed: critic(run) for run in hopper["no_target_networks"] if run.seed != 6}
    peaks = [q.max() for _, q in early.values()]
    assert (
        f"four seeds' critics peak between {min(peaks) / 1e5:.0f} x 10^5 and {max(peaks) / 1e5:.0f} x 10^5 within 15-20k"
        in notes
    )
    assert all(15_000 <= t[q.argmax()] <= 20_000 and q[-1] < 0 for t, q in early.values())
    assert all(returns(run)[-1] < 10 for run in hopper["no_target_networks"] if run.seed != 6)
    (late,) = [run for run in hopper["no_target_networks"] if run.seed == 6]
    t, q = critic(late)
    assert f"its mean Q peaks at {q.max() / 1e7:.0f} x 10^7 at {t[q.argmax()] // 1000}k steps and is still" in notes
    assert f"{q[-1] / 1e6:.0f} x 10^6 at the end" in notes
    assert f"reached {returns(late).max():,.0f} in one evaluation before its return fell to {returns(late)[-1]:.0f}." in notes


def test_later_seeds_halfcheetah(data, later, notes):
    cheetah = later.runs["HalfCheetah-v5"]
    finals = [returns(run)[-1] for run in cheetah["td3"]]
    assert f"Seeds 5-9 (batched engine, 35 runs): TD3 ends at {min(finals):,.0f}-{max(finals):,.0f}." in notes
    runs = cheetah["no_target_networks"]
    highest = max(runs, key=lambda run: critic(run)[1].max())
    peak = critic(highest)[1].max()
    assert (
        f"no critic diverges as far as seed 3's did (the highest peak of mean Q is {peak / 1e4:.0f} x 10^4, "
        f"seed {highest.seed})" in notes
    )
    (seed_3,) = [run for run in data.runs["HalfCheetah-v5"]["no_target_networks"] if run.seed == 3]
    assert peak < 1e9 and critic(seed_3)[1][-1] > 1e9
    assert "every seed ends with Q below 0, and four of the five with negative returns" in notes
    assert all(critic(run)[1][-1] < 0 for run in runs)
    positive = [run for run in runs if returns(run)[-1] >= 0]
    assert len(positive) == 1 and f"seed {positive[0].seed} ends at +{returns(positive[0])[-1]:,.0f}." in notes


def test_later_seeds_lunarlander(ten, later, notes):
    td3 = later.runs["LunarLanderContinuous-v3"]["td3"]
    average = np.mean([returns(run)[run.timesteps >= 100_000] for run in td3])
    assert f"Seeds 5-9 (batched engine, 35 runs) did better: TD3 averages about {average:.0f} from 100k steps on." in notes
    (lander,) = [run for run in td3 if returns(run).max() >= 150]
    best = returns(lander)
    assert f"Seed {lander.seed}'s TD3 reached {best.max():.1f} at {lander.timesteps[best.argmax()] // 1000}k steps" in notes
    assert f"had {(best >= 150).sum()} evaluations of 150 or more, then ended at {best[-1]:.1f}." in notes
    others = max(returns(run).max() for run in td3 if run is not lander)
    assert f"The other four never reached 150 (best {others:.1f})." in notes

    # with all 10 seeds: clipped double Q differs (in both engines' seeds alike), target networks stay unresolved
    env = "LunarLanderContinuous-v3"
    comparisons = verdicts(ten, env)
    cdq, tn = comparisons["no_clipped_double_q"], comparisons["no_target_networks"]
    assert cdq.n == 10 and cdq.verdict == "differs" and cdq.effect > 0
    assert f"(`differs`, +{cdq.effect:.1f} [{cdq.ci[0]:.1f}, {cdq.ci[1]:.1f}], Holm {cdq.p_adjusted:.2g})" in notes
    variant, td3_outcome = primary(ten, env, "no_clipped_double_q"), primary(ten, env, "td3")
    by_engine = [np.mean([variant[seed] - td3_outcome[seed] for seed in seeds]) for seeds in (SEEDS, LATER_SEEDS)]
    assert f"in seeds 0-4 (+{by_engine[0]:.1f}) as in seeds 5-9 (+{by_engine[1]:.1f})" in notes
    assert min(by_engine) > 0
    assert tn.verdict == "unresolved" and f"stays `unresolved` (+{tn.effect:.1f}; {tn.seeds_needed} seeds would" in notes
    paper = {task: table["no_clipped_double_q"] - table["td3"] for task, table in PAPER_TABLE2.items()}
    assert "found removing clipped double Q costly on Hopper, Walker2d and Ant and slightly helpful on HalfCheetah" in notes
    assert sorted(task for task, effect in paper.items() if effect < 0) == ["Ant", "Hopper", "Walker2d"]
    assert f"(+{paper['HalfCheetah']:.0f})" in notes


def test_more_seeds_go_where_the_estimate_is_within_reach(ten):
    """README's paragraph on seeds 10-19 names the comparisons the 10-seed report puts within 20 seeds."""
    text = readme_text("Seeds 10-19 go only to the comparisons", "The report: [")
    unresolved = {
        (env, variant): c.seeds_needed
        for env in ten.envs
        for variant, c in verdicts(ten, env).items()
        if c.verdict == "unresolved"
    }
    within = [(env, variant, n) for (env, variant), n in unresolved.items() if n is not None and n <= 20]
    assert within == [("HalfCheetah-v5", "no_clipped_double_q", 20)]
    assert "is 20 or fewer: HalfCheetah-v5 no_clipped_double_q (20 seeds)" in text
    nearest = sorted((n, env, variant) for (env, variant), n in unresolved.items() if n is not None and n > 20)[:2]
    assert f"(the nearest: {nearest[0][1]} {nearest[0][2]} {nearest[0][0]}, {nearest[1][1]} {nearest[1][2]} " in text
    assert f"{nearest[1][0]})" in text
    # the plan has those seeds for that comparison alone, and they are in
    study = load_study(STUDY)
    planned = {(env, variant) for env, variant, seed in planned_runs(study.manifest) if seed >= 10}
    assert planned == {("HalfCheetah-v5", "td3"), ("HalfCheetah-v5", "no_clipped_double_q")} and not study.missing

    # what the 20 seed pairs say, beside the paper's +260 at 1M steps, and LunarLander's opposite verdict: the whole
    # study's model, as the report builds it (its sign tests name the task-dependent components)
    model = build_model(study, study_plan(study), None, "td3", reps=100, seed=0)
    primary_comparisons = {e.env: next(o for o in e.outcomes if o.primary).comparisons for e in model.envs}
    cdq = primary_comparisons["HalfCheetah-v5"]["no_clipped_double_q"]
    assert cdq.n == 20 and cdq.verdict == "differs" and cdq.effect < 0
    assert (
        f"removing clipped double Q costs {cdq.effect:,.1f} [{cdq.ci[0]:,.1f}, {cdq.ci[1]:,.1f}] (Holm {cdq.p_adjusted:.2g})"
        in text
    )
    paper = PAPER_TABLE2["HalfCheetah"]
    assert f"where the TD3 paper measured +{paper['no_clipped_double_q'] - paper['td3']:.0f} at 1M steps" in text
    lander = primary_comparisons["LunarLanderContinuous-v3"]["no_clipped_double_q"]
    assert lander.verdict == "differs" and lander.effect > 0
    assert "clipped double Q is the one component whose effect changes sign between tasks here" in text
    assert model.across is not None
    assert [test.variant for test in model.across.sign_tests if test.task_dependent] == ["no_clipped_double_q"]
