"""The docs say what the committed records say: the generated pages (README's answer, docs/results/) regenerate
unchanged from the committed reports, every committed study keeps its run records in git (its arms included), every
relative link resolves, and the switch table is the generated one.

Fast: no Sphinx here (`make docs` builds the site, strict, in CI after `make test`)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from docs.generate import algorithm_pages, answer_key, docs_results, readme_answer
from docs.generate.files import write_or_check
from sb3_ablation.switches import markdown_table

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "results").glob("*.md")),
    *sorted((ROOT / "docs" / "algorithms").glob("*.md")),
]


def _check(generator, capsys) -> tuple[int, str]:
    """``python -m docs.generate.NAME --check`` in this process (the same ``main``; `make docs` runs the command itself):
    its exit status and what it printed."""
    status = generator.main(["--check"])
    printed = capsys.readouterr()
    return status, printed.out + printed.err


def test_readmes_answer_is_the_one_the_committed_reports_give(capsys):
    status, printed = _check(readme_answer, capsys)
    assert status == 0, printed


def test_the_results_pages_are_the_ones_the_committed_reports_give(capsys):
    status, printed = _check(docs_results, capsys)
    assert status == 0, printed


def test_the_answer_key_is_the_one_the_committed_reports_give(capsys):
    status, printed = _check(answer_key, capsys)
    assert status == 0, printed


def test_the_answer_key_follows_the_reports(tmp_path, monkeypatch):
    """The answer key is generated from report.json: a verdict or an estimate changed in a report changes the page,
    and --check then refuses the committed page."""
    studies = tmp_path / "studies"
    for folder in ("pendulum", "pendulum-sequential", "multitask"):
        (studies / folder).mkdir(parents=True)
        (studies / folder / "report.json").write_text((ROOT / "docs" / "studies" / folder / "report.json").read_text())
    monkeypatch.setattr(answer_key, "STUDIES", studies)
    committed = (ROOT / "docs" / "answer-key.md").read_text()
    assert answer_key.page() == committed
    report = json.loads((studies / "pendulum" / "report.json").read_text())
    entry = report["envs"]["Pendulum-v1"]["outcomes"][report["plan"]["primary"]]["variants"]["no_clipped_double_q"]
    entry.update(
        verdict="differs",
        qualified_verdict="differs",
        test_verdict="differs",
        label=None,
        effect=-1234.5,
        ci=[-2000.0, -1000.0],
    )
    (studies / "pendulum" / "report.json").write_text(json.dumps(report))
    page = answer_key.page()
    section = page.split("### clipped_double_q")[1].split("###")[0]
    assert "**differs**, -1,234.5 [-2,000.0, -1,000.0]" in section and '`MY_VERDICT = "differs"`, `MY_SIGN = "-"`' in section
    assert "| clipped_double_q | differs -1,234 |" in page
    monkeypatch.setattr(sys, "argv", ["answer_key.py", "--check"])
    assert answer_key.main() == 1


def test_the_answer_key_leaves_out_what_a_report_lacks(tmp_path, monkeypatch):
    """Fields are read by key: without the README's replication or an outcome, the key loses those lines, no error."""
    studies = tmp_path / "studies"
    (studies / "pendulum").mkdir(parents=True)
    report = json.loads((ROOT / "docs" / "studies" / "pendulum" / "report.json").read_text())
    del report["envs"]["Pendulum-v1"]["outcomes"]["overestimation"]
    (studies / "pendulum" / "report.json").write_text(json.dumps(report))
    monkeypatch.setattr(answer_key, "STUDIES", studies)
    page = answer_key.page()
    assert "**The committed answer**" in page and "Overestimation at the end" not in page
    assert "The README's answer" not in page
    assert "| replay_buffer | differs -1,332 | — | — | — |" in page


def test_the_algorithm_pages_results_are_the_ones_the_committed_reports_give(capsys):
    status, printed = _check(algorithm_pages, capsys)
    assert status == 0, printed


def test_the_algorithm_pages_follow_the_reports(tmp_path, monkeypatch):
    """The pages' Results blocks are generated from report.json: a changed baseline changes the block, --check refuses
    the committed page, and a rewrite changes only the block."""
    studies = tmp_path / "studies"
    for folder in ("pendulum", "pendulum-2x6"):
        (studies / folder).mkdir(parents=True)
        for name in ("report.json", "study.json"):
            (studies / folder / name).write_text((ROOT / "docs" / "studies" / folder / name).read_text())
    pages = tmp_path / "algorithms"
    pages.mkdir()
    for name in algorithm_pages.GENERATORS:
        (pages / name).write_text((ROOT / "docs" / "algorithms" / name).read_text())
    monkeypatch.setattr(algorithm_pages, "STUDIES", studies)
    monkeypatch.setattr(algorithm_pages, "PAGES", pages)
    report = json.loads((studies / "pendulum-2x6" / "report.json").read_text())
    outcome = report["envs"]["Pendulum-v1"]["outcomes"][report["plan"]["primary"]]
    outcome["baseline"]["mean"] = -123.4
    outcome["variants"]["ddpg"].update(verdict="differs", qualified_verdict="differs", effect=-55.5, ci=[-60.0, -50.0])
    (studies / "pendulum-2x6" / "report.json").write_text(json.dumps(report))
    monkeypatch.setattr(sys, "argv", ["algorithm_pages.py", "--check"])
    assert algorithm_pages.main() == 1
    monkeypatch.setattr(sys, "argv", ["algorithm_pages.py"])
    assert algorithm_pages.main() == 0
    ddpg = (pages / "ddpg.md").read_text()
    assert "| Pendulum-v1 | 20,000 | 10 | -123.4 | differs | -55.5 [-60.0, -50.0] |" in ddpg
    assert "hopper-factorial" not in ddpg  # only the studies there are
    committed = (ROOT / "docs" / "algorithms" / "ddpg.md").read_text()
    assert ddpg.split(algorithm_pages.START)[0] == committed.split(algorithm_pages.START)[0]
    assert ddpg.split(algorithm_pages.END)[1] == committed.split(algorithm_pages.END)[1]


def test_write_or_check_compares_then_writes_text_and_bytes(tmp_path, capsys):
    """Every generator's one way of writing: --check writes nothing and names each file that differs (a page, a
    figure's bytes, a file no longer generated); a write brings them all in line, touching nothing else."""
    page, figure, gone, kept = (tmp_path / name for name in ("page.md", "figure.png", "gone.png", "kept.md"))
    page.write_text("old\n")
    gone.write_bytes(b"old figure")
    kept.write_text("by hand\n")
    fresh = {page: "new\n", figure: b"\x89PNG new"}
    assert write_or_check(fresh, True, "make it", [gone]) == 1
    printed = capsys.readouterr().err
    assert printed.count("\n") == 1 and all(str(path) in printed for path in (page, figure, gone)) and "make it" in printed
    assert page.read_text() == "old\n" and not figure.exists() and gone.exists()
    assert write_or_check(fresh, False, "make it", [gone]) == 0
    assert page.read_text() == "new\n" and figure.read_bytes() == b"\x89PNG new" and not gone.exists()
    assert kept.read_text() == "by hand\n"
    assert write_or_check(fresh, True, "make it", [gone]) == 0


def test_the_check_names_a_stale_page(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_results, "RESULTS", tmp_path)
    for name, text in docs_results.pages().items():
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(sys, "argv", ["docs_results.py", "--check"])
    assert docs_results.main() == 0
    (tmp_path / "pendulum.md").write_text("# edited by hand\n")
    (tmp_path / "gone.md").write_text("# a study that no longer exists\n")
    assert docs_results.main() == 1
    monkeypatch.setattr(sys, "argv", ["docs_results.py"])
    assert docs_results.main() == 0
    assert not (tmp_path / "gone.md").exists()
    assert (tmp_path / "pendulum.md").read_text() == docs_results.pages()["pendulum.md"]


def test_a_study_page_is_its_report_with_links_into_the_study_folder():
    page = docs_results.pages()["pendulum.md"]
    report = (ROOT / "docs" / "studies" / "pendulum" / "report.md").read_text()
    assert page.splitlines()[2] == "# pendulum: Pendulum-v1"
    assert "](../studies/pendulum/figures/Pendulum-v1_learning_curves.png)" in page
    assert "](figures/" not in page
    # the report's text otherwise unchanged: every line of it without a link is on the page
    assert all(line in page for line in report.splitlines()[1:] if "](" not in line and not line.startswith("#"))


def test_headings_rise_to_follow_each_other():
    text = "# Title\n\n### a\n\n```\n### code, not a heading\n```\n\n#### b\n\n### c\n"
    assert docs_results._consecutive_headings(text) == "# Title\n\n## a\n\n```\n### code, not a heading\n```\n\n### b\n\n## c"


def test_relative_links_point_into_the_study_folder_and_others_stay():
    folder = Path("docs/studies/x")
    text = "![f](figures/a.png) [s](study.json) [w](https://example.org/a) [h](#anchor)"
    assert docs_results._relink(text, folder) == (
        "![f](../studies/x/figures/a.png) [s](../studies/x/study.json) [w](https://example.org/a) [h](#anchor)"
    )


def test_the_papers_numbers_are_table_2_with_their_source():
    paper = yaml.safe_load((ROOT / "docs" / "generate" / "td3_paper_table2.yml").read_text())
    assert "Fujimoto" in paper["source"] and "Table 2" in paper["source"]
    rows = {row["method"]: row for row in paper["rows"]}
    assert len(rows) == 9 and all(set(paper["tasks"]) <= set(row) for row in rows.values())
    assert rows["TD3"]["Hopper"] == 3304.75 and rows["TD3 - CDQ"]["Ant"] == 849.75
    variants = {row["variant"] for row in paper["rows"] if "variant" in row}
    assert variants == {"td3", "no_delayed_policy_update", "no_target_policy_smoothing", "no_clipped_double_q"}


def test_readme_stays_short_and_shows_how_to_test():
    readme = (ROOT / "README.md").read_text()
    assert (ROOT / "README.md").stat().st_size <= 14 * 1024
    assert "make test" in readme and "make docs" in readme


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if "://" not in target:
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def test_every_page_is_in_the_sites_table_of_contents():
    index = (ROOT / "docs" / "index.md").read_text()
    for page in [*(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "algorithms").glob("*.md")]:
        name = page.relative_to(ROOT / "docs").with_suffix("").as_posix()
        assert page.name == "index.md" or f"\n{name}\n" in index, f"docs/{name}.md is in no toctree of index.md"


def test_the_guides_switch_table_is_the_generated_one():
    guide = (ROOT / "docs" / "guide.md").read_text()
    marker = "<!-- generated by sb3_ablation.switches.markdown_table() -->\n"
    assert guide.count(marker) == 1
    assert guide.split(marker)[1].split("\n\n")[0] == markdown_table()


def test_every_committed_study_folder_keeps_its_run_records_in_git():
    """Every study folder under docs/studies, a tuned arm's ``tuned/`` included, has the records of its first grid (the
    first block of seeds) tracked by git: a report's numbers must recompute from a fresh clone, which has only what
    git tracks (an ignore rule once kept a tuned arm's records out). A study still running (no report.json yet, or
    runs still checkpointed) is held to the records it has finished."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "docs/studies"], cwd=ROOT, capture_output=True, text=True, check=True)
    tracked = set(listed.stdout.splitlines())
    studies = sorted((ROOT / "docs" / "studies").glob("**/study.json"))
    assert any(study.parent.name == "tuned" for study in studies)
    for study in studies:
        folder = study.parent.relative_to(ROOT).as_posix()
        grid = json.loads(study.read_text())["grids"][0]
        expected = {
            f"{folder}/runs/{env}/{variant}/seed_{seed}.json.gz"
            for env in grid["envs"]
            for variant in grid["variants"]
            for seed in grid["seeds"]
        }
        if not (study.parent / "report.json").exists() or any(study.parent.glob("runs/**/*.checkpoint")):
            expected = {record for record in expected if (ROOT / record).exists()}
        missing = sorted(expected - tracked)
        assert not missing, f"{folder}: {len(missing)} run records not in git, e.g. {missing[0]}"


def test_the_generators_are_one_package_that_imports_itself_normally():
    """docs/generate/ is a package (``python -m docs.generate``): its modules import each other by name, no module
    edits ``sys.path`` to find another."""
    generators = sorted((ROOT / "docs" / "generate").glob("*.py"))
    assert {path.name for path in generators} >= {"__init__.py", "__main__.py", "readme_answer.py", "answer_key.py"}
    for path in generators:
        assert "sys.path" not in path.read_text(), f"{path.name} edits sys.path"
