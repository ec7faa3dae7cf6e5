"""How a report gives its verdicts where TD3 learns: the labels of an `equivalent` (at floor, failures in an arm, at
ceiling), decided from the runs' fates alone, and the committed answer a report with too few seeds points to."""

import json

import pytest

from sb3_ablation.study.analyse.committed import committed_answer
from sb3_ablation.study.analyse.learning import equivalence_label
from sb3_ablation.study.analyse.run_fates import RunFate
from sb3_ablation.study.plan.learning_rules import LearningRules
from sb3_ablation.study.render.committed import answer_sentence
from sb3_ablation.study.render.labels import aggregate_labels, qualified_verdict

RULES = LearningRules()


def fates(finals, failed=()):
    """seed -> a run's fate with the given final return, failed (did not learn) on the seeds in ``failed``."""
    return {
        seed: RunFate(seed, final, did_not_learn=seed in failed, diverged=False, q=1.0, q_bound=10.0, exact_bound=True)
        for seed, final in enumerate(finals)
    }


# Pendulum-v1: random -1,218.9, reference -151.9 at 20k steps; the ceiling is within 5% of that span (53.35) below it
SOLVED = [-150.0 - 0.1 * seed for seed in range(10)]
ALSO_SOLVED = [value + (0.5 if seed % 2 else -0.5) for seed, value in enumerate(SOLVED)]
FLOOR = [-1200.0 - seed for seed in range(10)]


def test_an_equivalence_at_the_ceiling_between_runs_that_all_learned_is_labelled_at_ceiling():
    assert equivalence_label("Pendulum-v1", fates(ALSO_SOLVED), fates(SOLVED), RULES) == "at ceiling"
    # 100 below the reference: both learned, neither at the ceiling, nothing to label
    below = [value - 100.0 for value in SOLVED]
    assert equivalence_label("Pendulum-v1", fates(below), fates([v - 100.0 for v in ALSO_SOLVED]), RULES) is None
    # a task without a reference has no ceiling
    assert equivalence_label("MountainCarContinuous-v0", fates(ALSO_SOLVED), fates(SOLVED), RULES) is None


def test_an_equivalence_between_runs_that_all_failed_is_at_floor_and_one_failure_withholds_it():
    assert equivalence_label("Pendulum-v1", fates(FLOOR, range(10)), fates(FLOOR, range(10)), RULES) == "at floor"
    # one failed seed in the baseline alone: the return test cannot see it as a failure
    assert equivalence_label("Pendulum-v1", fates(ALSO_SOLVED), fates(SOLVED, {3}), RULES) == "failures in an arm"
    diverged = fates(ALSO_SOLVED)
    diverged[0] = RunFate(0, ALSO_SOLVED[0], False, True, 1e9, 10.0, True)  # a diverged critic is a failure too
    assert equivalence_label("Pendulum-v1", diverged, fates(SOLVED), RULES) == "failures in an arm"


def test_a_verdict_is_given_with_its_label_and_only_an_equivalent_carries_one():
    assert qualified_verdict("equivalent", "at ceiling") == "cannot tell: both arms solve the task at this budget"
    assert qualified_verdict("equivalent", "at floor") == "cannot tell: neither arm learns"
    assert qualified_verdict("equivalent", "failures in an arm") == "unresolved (failures in an arm)"
    assert qualified_verdict("equivalent", None) == "equivalent"
    assert (
        qualified_verdict("differs", "at floor") == "differs" and qualified_verdict("unresolved", "at ceiling") == "unresolved"
    )


def test_an_aggregate_equivalence_carries_every_tasks_label():
    class Learning:
        def __init__(self, env, labels):
            self.env, self.labels = env, labels

    tasks = [
        Learning("A", {"x": "at ceiling", "y": None, "z": "at floor"}),
        Learning("B", {"x": None, "y": None, "z": "failures in an arm"}),
    ]
    assert aggregate_labels(tasks, ["x", "y", "z"]) == {"x": "at ceiling on A", "y": None, "z": "failures in an arm"}


def write_report_json(folder, name, env, seeds, verdicts, sequential=False, sections=None):
    variants = {variant: {"verdict": verdict} for variant, verdict in verdicts.items()}
    outcome = {"variants": variants, **({"sequential": {}} if sequential else {})}
    report = {
        "plan": {"primary": "final_window"},
        "sections": sections or {},
        "envs": {env: {"seeds": list(range(seeds)), "training_steps": 20_000, "outcomes": {"final_window": outcome}}},
    }
    (folder / name).mkdir(parents=True)
    (folder / name / "report.json").write_text(json.dumps(report))


@pytest.fixture
def studies(tmp_path):
    """Committed studies of Pendulum-v1: a 10-seed leave-one-out, the same tuned (an extra section), a 20-seed
    sequential one, a 3-seed one and a 10-seed one that decided nothing."""
    loo = {"no_replay_buffer": "differs", "no_clipped_double_q": "equivalent"}
    write_report_json(tmp_path, "pendulum", "Pendulum-v1", 10, loo)
    write_report_json(tmp_path, "pendulum-tuned", "Pendulum-v1", 10, loo, sections={"tuning": {}})
    write_report_json(tmp_path, "pendulum-sequential", "Pendulum-v1", 20, loo, sequential=True)
    write_report_json(tmp_path, "pendulum-small", "Pendulum-v1", 3, loo)
    write_report_json(tmp_path, "pendulum-open", "Pendulum-v1", 10, {"no_replay_buffer": "unresolved"})
    return tmp_path


def test_a_report_with_too_few_seeds_points_to_the_committed_study_that_answers_its_task(studies):
    answer = committed_answer("Pendulum-v1", ["no_replay_buffer"], 2, folder=studies)
    assert (answer.study, answer.seeds, answer.page) == ("pendulum", 10, "docs/results/pendulum.md")
    sentence = answer_sentence(answer)
    assert "docs/results/pendulum.md" in sentence and "`pendulum`" in sentence and sentence.count(". ") == 0
    # never the report itself; then the fixed design without extra sections before the sequential and the tuned one
    assert committed_answer("Pendulum-v1", ["no_replay_buffer"], 2, studies / "pendulum", studies).study == "pendulum-tuned"
    # a study that covers more of the report's variants comes first
    write_report_json(studies, "pendulum-batched", "Pendulum-v1", 10, {"no_target_networks": "differs"})
    assert committed_answer("Pendulum-v1", ["no_target_networks"], 2, folder=studies).study == "pendulum-batched"
    # only studies with more seeds than the report, on the same task
    assert committed_answer("Pendulum-v1", ["no_replay_buffer"], 10, folder=studies).study == "pendulum-sequential"
    assert committed_answer("Pendulum-v1", ["no_replay_buffer"], 20, folder=studies) is None
    assert committed_answer("Hopper-v5", ["no_replay_buffer"], 2, folder=studies) is None


def test_the_repositorys_committed_answer_for_pendulum_is_its_results_page():
    answer = committed_answer("Pendulum-v1", ["no_replay_buffer", "no_clipped_double_q"], 2)
    assert answer is not None and answer.page == "docs/results/pendulum.md"
