"""README tables between `<!-- ampbench:KIND RUN -->` markers are generated from their runs: the
committed README agrees with its runs, and a table that drifts from its data is found."""

import pytest

from bench import paths, readme, report, results
from bench.cli import main
from bench.faults import UsageError
from tests.stored import small_grid, write_run


def test_every_generated_table_of_the_readme_matches_its_run():
    """Fails when a table in README.md and its run's data disagree: run `python -m bench
    readme` after changing a run folder or the code that renders its table."""
    text = (paths.ROOT / "README.md").read_text()
    found = readme.blocks(text)
    assert {b.kind for b in found} >= {"headline", "answer"}
    for block in found:
        assert block.body == readme.generate(block), f"README.md {block.label} is stale"


@pytest.fixture
def project(tmp_path):
    """A folder with a README holding one block of each timing kind, and the run they name."""
    write_run(tmp_path / "results" / "run1", small_grid())
    (tmp_path / "README.md").write_text(
        "# Title\n\nBefore.\n\n"
        "<!-- ampbench:headline results/run1 batch_size=8 -->\nstale text\n"
        "<!-- /ampbench:headline -->\n\nBetween.\n\n"
        "<!-- ampbench:table results/run1 columns=mode,total_ms optimizer=fused batch_size=32 -->"
        "\n<!-- /ampbench:table -->\n\nAfter.\n"
    )
    return tmp_path


def test_blocks_are_filled_from_their_runs_and_the_rest_is_kept(project):
    path = project / "README.md"
    changed = readme.update(path)
    assert [b.kind for b in changed] == ["headline", "table"]
    text = path.read_text()
    df = results.load(project / "results" / "run1")
    assert report.headline(df, batch_size=8) in text
    assert text.startswith("# Title\n\nBefore.\n\n<!-- ampbench:headline results/run1 batch_size=8")
    assert "stale text" not in text and "\nBetween.\n" in text and text.endswith("\nAfter.\n")
    table = text.split("<!-- ampbench:table")[1]
    assert "| mode     |   total_ms |" in table and table.count("\n| ") == 4  # header + 3 modes
    assert readme.update(path) == []  # filled: nothing left to change


def test_check_reports_a_stale_block_and_changes_nothing(project, capsys):
    path = project / "README.md"
    before = path.read_text()
    assert main(["readme", "--check", "--file", str(path)]) == 1
    assert path.read_text() == before
    assert "line 5: ampbench:headline results/run1: disagrees" in capsys.readouterr().err
    assert main(["readme", "--file", str(path)]) == 0
    assert main(["readme", "--check", "--file", str(path)]) == 0


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("<!-- ampbench:headline results/run1 -->\n", "no closing marker"),
        ("<!-- ampbench:chart results/run1 -->\n<!-- /ampbench:chart -->", "unknown kind"),
        ("<!-- ampbench:headline results/nope -->\n<!-- /ampbench:headline -->", "not a run"),
        ("<!-- ampbench:headline -->\n<!-- /ampbench:headline -->", "names no run"),
        ("<!-- ampbench:headline results/run1 fused -->\n<!-- /ampbench:headline -->", "KEY=VALUE"),
        ("<!-- ampbench:headline results/run1 seed=1 -->\n<!-- /ampbench:headline -->", "seed="),
    ],
)
def test_bad_markers_are_named(project, text, needle):
    with pytest.raises(UsageError, match=needle):
        readme.regenerate(text, project)


def test_an_answer_quote_keeps_the_paragraphs_asked_for():
    run = "results/20261130T100845Z_NVIDIA-H200_b94d1da_numerics_divergence"
    block = f"<!-- ampbench:answer {run} only=Divergence,Why -->\n<!-- /ampbench:answer -->"
    text, _ = readme.regenerate(block, paths.ROOT)
    assert "> **Divergence**" in text and "> **Why it diverged**" in text
    assert "**dtypes.**" not in text and "**Longer horizon**" not in text
    with pytest.raises(UsageError, match="no paragraph 'Nope'"):
        readme.regenerate(block.replace("Why", "Nope"), paths.ROOT)


def test_the_recipes_table_names_the_fastest_mode_per_batch_size(tmp_path):
    write_run(tmp_path / "results" / "run1", small_grid())
    block = "<!-- ampbench:recipes results/run1 -->\n<!-- /ampbench:recipes -->"
    text, _ = readme.regenerate(block, tmp_path)
    df = results.load(tmp_path / "results" / "run1")
    ok = df[(df["status"] == "ok") & (df["optimizer"] == "fused")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()]
    fastest = {r[0]: r[1] for r in cells if len(r) > 2 and r[0].isdigit()}
    assert len(fastest) == ok["batch_size"].nunique()
    for bs, g in ok.groupby("batch_size"):
        best = g.loc[g["total_ms"].idxmin()]
        assert fastest[str(bs)] == f"{best['mode']} ({best['variant']})"
    with pytest.raises(UsageError, match="takes optimizer="):
        readme.regenerate(block.replace("run1", "run1 seed=1"), tmp_path)


def test_the_headline_names_the_modes_it_leaves_out(tmp_path):
    write_run(tmp_path / "run1", small_grid())
    df = results.load(tmp_path / "run1")
    df.loc[(df["mode"] == "tf32") & (df["batch_size"] == 32), "status"] = "unsupported"
    text = report.headline(df, batch_size=32)
    assert "| tf32" not in text and "| bf16-amp" in text
    assert text.endswith("Not in the table: tf32 (unsupported) (see the cases that did not pass).")
