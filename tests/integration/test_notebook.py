"""The course notebook: committed without outputs, runnable top to bottom (with the tiny budgets of
``SB3_ABLATION_QUICK=1``, about a minute), on the public API, with the committed studies' numbers read from their
report.json files."""

from pathlib import Path

import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "td3_ablation_exercise.ipynb"


def test_notebook_is_committed_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code_cells
    for cell in code_cells:
        assert cell.outputs == [] and cell.execution_count is None, cell.source[:80]


def test_notebook_runs_top_to_bottom(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("SB3_ABLATION_QUICK", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
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
