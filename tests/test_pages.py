"""`ampbench pages`: every published page from the folders in one command, and `--record RUN`
moving the blocks that quote the run of record onto RUN. On a tiny project of its own: two
timing runs of a GPU, a README with a headline and a summary, a docs page with a variants
table; the project's own results/ is never read."""

import importlib.util

import pytest

from bench.cli import main
from bench.publish import index, pages
from tests.stored import small_grid, write_run

OLD = "20261201T000000Z_NVIDIA-H200_aaaaaaa"
NEW = "20261205T000000Z_NVIDIA-H200_bbbbbbb"
H200 = "NVIDIA H200"


@pytest.fixture
def project(tmp_path):
    res = tmp_path / "results"
    for name, when, sha, ms in [
        (OLD, "2026-12-01T00:00:00+00:00", "a" * 40, 1.0),
        (NEW, "2026-12-05T00:00:00+00:00", "b" * 40, 0.8),
    ]:
        rows = [{**r, "total_ms": r["total_ms"] * ms} for r in small_grid()]
        write_run(res / name, rows, gpu=H200, started=when, commit=sha)
        (res / name / "report.md").write_text("# report\n")
    (tmp_path / "README.md").write_text(
        "# P\n\n"
        f"<!-- ampbench:summary results/{OLD} -->\n<!-- /ampbench:summary -->\n\n"
        f"<!-- ampbench:headline results/{OLD} batch_size=8 -->\n<!-- /ampbench:headline -->\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "variants.md").write_text(
        f"# V\n\n<!-- ampbench:variants ../results/{OLD} optimizer=fused -->\n"
        "<!-- /ampbench:variants -->\n\nThe run of record, `" + OLD + "`, in prose: kept.\n"
    )
    return tmp_path


def _pages(project, *extra):
    return main(
        ["pages", "--results-dir", str(project / "results"), "--file",
         str(project / "README.md"), *extra]
    )  # fmt: skip


def test_one_command_makes_the_blocks_the_index_and_the_history(project, capsys):
    assert _pages(project, "--no-site") == 0
    readme = (project / "README.md").read_text()
    assert f"[timing run](results/{OLD}/report.md) at commit aaaaaaa" in readme
    assert f"From [`{OLD}`](results/{OLD}/report.md) (recorded at commit aaaaaaa):" in readme
    variants = (project / "docs" / "variants.md").read_text()
    assert "(recorded at commit aaaaaaa):" in variants and "| mode" in variants
    written = (project / "results" / index.INDEX).read_text()
    assert written == index.render(project / "results")
    assert f"[{OLD}]({OLD}/report.md)" in written.split("## ")[0]  # the run of record
    assert (project / "results" / "history" / "NVIDIA-H200.md").is_file()
    # Made again from the same folders: nothing changes.
    before = {p: p.read_text() for p in project.rglob("*.md")}
    assert _pages(project, "--no-site") == 0
    assert {p: p.read_text() for p in project.rglob("*.md")} == before


def test_record_moves_every_block_of_the_run_of_record_and_nothing_else(project, capsys):
    assert _pages(project, "--no-site", "--record", str(project / "results" / NEW)) == 0
    readme = (project / "README.md").read_text()
    assert OLD not in readme and f"<!-- ampbench:headline results/{NEW} batch_size=8 -->" in readme
    assert "(recorded at commit bbbbbbb):" in readme
    variants = (project / "docs" / "variants.md").read_text()
    assert f"<!-- ampbench:variants ../results/{NEW} optimizer=fused -->" in variants
    assert f"The run of record, `{OLD}`, in prose: kept." in variants  # prose is not a block
    written = (project / "results" / index.INDEX).read_text()
    assert f"[{NEW}]({NEW}/report.md)" in written.split("## ")[0]
    assert "now quotes" in capsys.readouterr().err


def test_record_refuses_what_is_no_record_and_changes_nothing(project, capsys):
    before = (project / "README.md").read_text()
    cpu = write_run(project / "results" / "20261206T000000Z_cpu_ccccccc", small_grid()[:2])
    (cpu / "report.md").write_text("# report\n")
    (project / "results" / NEW / "report.md").unlink()
    for run, said in [
        (cpu, "a CPU run is a smoke test"),
        (project / "results" / NEW, "no report.md"),
        (project / "results" / "missing", "not a timing run folder"),
        (project / "elsewhere", "not a folder of"),
    ]:
        assert _pages(project, "--no-site", "--record", str(run)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0]
    assert (project / "README.md").read_text() == before


@pytest.mark.skipif(
    importlib.util.find_spec("markdown") is None or importlib.util.find_spec("plotly") is None,
    reason="the site extra (markdown, plotly) is not installed",
)
def test_the_site_is_made_with_the_rest(project, tmp_path_factory, capsys):
    site = tmp_path_factory.mktemp("out") / "site"
    assert _pages(project, "--output", str(site)) == 0
    assert (site / "index.html").is_file() and (site / "runs" / NEW / "index.html").is_file()


def test_repoint_names_the_missing_headline(tmp_path):
    (tmp_path / "README.md").write_text("# nothing generated\n")
    with pytest.raises(Exception, match="no ampbench:headline block"):
        pages.record_of(tmp_path / "README.md")
