"""The course notebook: committed without outputs and without predictions, runnable top to bottom once a student has
written one (with the tiny budgets of ``SB3_ABLATION_QUICK=1``, about a minute), on the public API, with the committed
studies' numbers read from their report.json files."""

from pathlib import Path

import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "td3_ablation_exercise.ipynb"
PREDICTION = ("COMPONENT", "MY_VERDICT", "MY_SIGN", "MY_REASON")
# what a student writes into the prediction cell (4a)
STUDENTS_PREDICTION = """COMPONENT = "target_policy_smoothing"
MY_VERDICT = "unresolved"
MY_SIGN = "-"
MY_REASON = "Pendulum's critic barely overestimates, so smoothing its targets changes little."
"""


def _prediction_cell(notebook):
    (cell,) = [cell for cell in notebook.cells if cell.cell_type == "code" and "MY_VERDICT = " in cell.source]
    return cell


def test_notebook_is_committed_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code_cells
    for cell in code_cells:
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:80]


def test_notebook_leaves_the_prediction_to_the_student():
    """Cell 4a holds no prediction: every value is None until the student writes it, and cell 4b refuses to run
    before (the study would otherwise show the answer first)."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assignments = dict(line.split(" = ", 1) for line in _prediction_cell(notebook).source.splitlines())
    assert {name: value.split("#")[0].strip() for name, value in assignments.items()} == dict.fromkeys(PREDICTION, "None")
    (run_it,) = [cell for cell in notebook.cells if cell.cell_type == "code" and "run_study(mine)" in cell.source]
    checks = run_it.source.split("mine = StudyConfig")[0]  # the lines before the study
    scope: dict = {}
    exec(_prediction_cell(notebook).source, scope)
    with pytest.raises(ValueError, match="write your prediction in the cell above first: COMPONENT, MY_VERDICT"):
        exec(checks, scope)
    exec(STUDENTS_PREDICTION, scope)
    exec(checks, scope)  # a written prediction passes


@pytest.mark.parametrize("flag", [True, False])
def test_the_example_prediction_flag_fills_only_an_empty_prediction(flag):
    """SB3_ABLATION_PREDICTION=example (documented in the first code cell) lets a headless run pass section 4."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert 'EXAMPLE_PREDICTION = os.environ.get("SB3_ABLATION_PREDICTION") == "example"' in notebook.cells[2].source
    (example,) = [cell for cell in notebook.cells if cell.cell_type == "code" and "if EXAMPLE_PREDICTION" in cell.source]
    scope: dict = {"EXAMPLE_PREDICTION": flag}
    exec(_prediction_cell(notebook).source, scope)
    exec(example.source, scope)
    assert (scope["COMPONENT"], scope["MY_VERDICT"]) == (("replay_buffer", "differs") if flag else (None, None))
    exec(STUDENTS_PREDICTION, scope)
    exec(example.source, scope)  # a student's prediction is never replaced
    assert scope["COMPONENT"] == "target_policy_smoothing"


def test_notebook_installs_without_editing():
    """The install cell has no placeholder address to replace: it installs an uploaded wheel (or asks for one on
    Colab), or SOURCE when set, and says what to do otherwise."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    install = notebook.cells[2].source
    assert "<org>" not in install and 'SOURCE = ""' in install
    assert 'glob("sb3_ablation-*.whl")' in install and "files.upload()" in install and "pip wheel --no-deps" in install


def test_notebook_runs_top_to_bottom(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("SB3_ABLATION_QUICK", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    _prediction_cell(notebook).source = STUDENTS_PREDICTION
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(
        output.get("text", "") + "".join(str(output.get("data", {}).get(kind, "")) for kind in ("text/markdown", "text/plain"))
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert "quick check" in outputs
    # the report was shown inline, and the study wrote its records where the notebook ran
    assert "no_clipped_double_q" in outputs and "IQM" in outputs
    # the "your turn" study extended the same folder by one variant: td3's runs were reused, 2 seeds x 3 variants
    assert len(list((tmp_path / "runs" / "notebook_study" / "runs").glob("*/*/seed_*.json.gz"))) == 6
    assert "your prediction: unresolved -; the study:" in outputs
    # the committed studies' verdicts, read from their report.json
    assert "Hopper-v5" in outputs and "LunarLanderContinuous-v3" in outputs
    if not any(output.output_type == "display_data" for cell in notebook.cells for output in cell.get("outputs", [])):
        pytest.fail("no figure was displayed")


def test_notebook_uses_the_current_overestimation_measure_and_types_in_no_result():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert '"overestimation"' in code and '"bias"' not in code
    assert "report.json" in code
    # the install cell keeps the runtime's torch (Colab's CUDA build): nothing pins or reinstalls torch
    assert "torch==" not in code and "--force-reinstall" not in code


def test_the_notebooks_study_has_the_setting_and_seeds_of_the_committed_study_the_answer_key_reads():
    """docs/answer-key.md answers from docs/studies/pendulum: the notebook's full study must be that study's setting
    (budget, evaluations, hyperparameters, seeds) with some of its variants."""
    import ast
    import json

    from sb3_ablation.study.plan.config import StudyConfig

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    (cell,) = [cell for cell in notebook.cells if cell.cell_type == "code" and "SETTINGS = dict(" in cell.source]
    # NET, SETTINGS and VARIANTS as the full exercise sets them (QUICK off), without running anything
    statements = [
        node
        for node in ast.parse(notebook.cells[2].source.replace("%pip", "# %pip") + "\n" + cell.source).body
        if (isinstance(node, ast.If) and "VARIANTS" in ast.unparse(node))
        or (isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) in ("NET", "SETTINGS", "VARIANTS"))
    ]
    scope: dict = {"QUICK": False}
    exec(compile(ast.Module(body=statements, type_ignores=[]), "notebook", "exec"), scope)
    study = StudyConfig(variants=scope["VARIANTS"], **scope["SETTINGS"])
    committed = json.loads((NOTEBOOK.parents[1] / "docs" / "studies" / "pendulum" / "study.json").read_text())
    settings = committed["settings"]
    assert (study.envs, list(study.seeds)) == (committed["envs"], committed["seeds"])
    assert (study.n_timesteps, study.eval_freq, study.eval_episodes) == (
        settings["n_timesteps"], settings["eval_freq"], settings["eval_episodes"],
    )  # fmt: skip
    assert study.hyperparams == settings["hyperparams"] and set(study.variants) < set(committed["variants"])
