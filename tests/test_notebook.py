"""The course notebook: committed without outputs, and runnable top to bottom (with the tiny budgets of
``SB3_ABLATION_QUICK=1``, about a minute)."""

from pathlib import Path

import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "td3_ablation_exercise.ipynb"


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
        output.get("text", "") + str(output.get("data", {}).get("text/markdown", ""))
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert "quick check" in outputs
    # the report was shown inline, and the study wrote its records where the notebook ran
    assert "no_clipped_double_q" in outputs and "IQM" in outputs
    assert len(list((tmp_path / "runs" / "notebook_study" / "runs").glob("*/*/seed_*.json.gz"))) == 4
    if not any(output.output_type == "display_data" for cell in notebook.cells for output in cell.get("outputs", [])):
        pytest.fail("no figure was displayed")
