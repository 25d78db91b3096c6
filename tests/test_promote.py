"""A user's runs stay out of the published results: they land in the git-ignored runs/, and
`promote` copies a GPU run into results/ and regenerates its index; a CPU smoke run is refused
and never indexed. Every test works in its own folders: the project's runs/ and results/ are
monkeypatched away, never read or written."""

import os
import subprocess
import sys

import pandas as pd
import pytest

import bench
from bench import cli
from bench.cli import main
from bench.publish import index
from bench.store import folders, paths, results
from bench.store import tree as runs
from tests.optional import not_a_checkout
from tests.stored import small_grid, write_run

H200 = "NVIDIA H200"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The project's runs/ and results/, moved to `tmp_path`."""
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    return tmp_path


def _gpu_run(parent, name="20261201T000000Z_NVIDIA-H200_0157d67", **kwargs):
    run = write_run(parent / name, small_grid()[:2], gpu=H200, **kwargs)
    (run / results.REPORT).write_text("# report\n")
    return run


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_runs_is_the_projects_git_ignored_folder():
    assert paths.RUNS == paths.ROOT / "runs"
    if not_a_checkout(paths.ROOT):
        pytest.skip(not_a_checkout(paths.ROOT))
    out = subprocess.run(
        ["git", "-c", "safe.directory=*", "check-ignore", "-q", "runs/x/env.json"],
        cwd=paths.ROOT,
        check=False,
    )
    assert out.returncode == 0, "runs/ is not in .gitignore"


def test_a_run_lands_in_runs_by_default_and_leaves_results_alone(project, capsys):
    argv = ["run", "--device", "cpu", "--modes", "fp32", "--batch-sizes", "4"]
    argv += ["--optimizers", "fused", "--steps", "2", "--warmup", "0", "--no-overhead"]
    assert main(argv) == 0
    (run_dir,) = (project / "runs").iterdir()
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(run_dir)
    assert (run_dir / results.ROWS).is_file() and (run_dir / results.REPORT).is_file()
    assert not (project / "results").exists()  # no folder, no index written
    # The studies and the searches go there too; an explicit --results-dir still wins.
    parser = cli.build_parser()
    for command in ("run", "numerics", "maxbatch"):
        assert parser.parse_args([command]).results_dir == project / "runs"
        given = parser.parse_args([command, "--results-dir", str(project / "x")])
        assert given.results_dir == project / "x"


def test_promote_copies_a_run_into_results_and_indexes_it(project, capsys):
    run = _gpu_run(project / "runs")
    (run / folders.LOCK).write_text("")  # as every run leaves it
    results.write_csv(results.load(run), run)  # as a finished run's report leaves it
    assert main(["promote", str(run)]) == 0
    out, err = capsys.readouterr()
    published = project / "results" / run.name
    assert out.strip() == str(published)
    assert "updated" in err
    assert run.is_dir()  # a copy: the run stays where it was
    copied = {p.relative_to(published).as_posix() for p in published.rglob("*")}
    # The same files, the lock left out and the rows, raw samples and CSV gzip-compressed.
    made = {p.relative_to(run).as_posix() for p in run.rglob("*")} - {folders.LOCK}
    packed = {results.ROWS, results.SAMPLES, results.CSV}
    assert packed <= made
    assert copied == made - packed | {name + ".gz" for name in packed}
    assert results.read_rows(published / results.ROWS) == results.read_rows(run / results.ROWS)
    pd.testing.assert_frame_equal(bench.load_samples(published), bench.load_samples(run))
    pd.testing.assert_frame_equal(results.load(published), results.load(run))
    # A published folder is a run folder to every command that reads one, and `report` keeps
    # its CSV packed, the same table as the run's.
    assert main(["report", str(published)]) == 0
    assert not (published / results.CSV).exists()
    pd.testing.assert_frame_equal(
        pd.read_csv(published / (results.CSV + ".gz")), pd.read_csv(run / results.CSV)
    )
    text = (project / "results" / index.INDEX).read_text()
    assert f"[report]({run.name}/report.md)" in text and H200 in text
    assert not list((project / "results").glob(".*partial"))


def test_promote_move_and_an_explicit_destination(project, capsys):
    runs = [
        _gpu_run(project / "runs", "20261201T000000Z_NVIDIA-H200_a"),
        _gpu_run(project / "runs", "20261201T010000Z_NVIDIA-H200_b"),
    ]
    elsewhere = project / "published"
    argv = ["promote", *map(str, runs), "--move", "--results-dir", str(elsewhere)]
    assert main(argv) == 0
    assert capsys.readouterr().out.split() == [str(elsewhere / r.name) for r in runs]
    assert not any(r.exists() for r in runs)  # moved
    assert all((elsewhere / r.name / results.ENV).is_file() for r in runs)
    # Outside the project's results/, the destination gets an index of its own.
    text = (elsewhere / index.INDEX).read_text()
    assert all(f"[report]({r.name}/report.md)" in text for r in runs)
    assert not (project / "results").exists()


def test_promote_refuses_a_cpu_run_unless_allowed(project, capsys):
    cpu = write_run(project / "runs" / "20261201T000000Z_cpu_nogit", small_grid()[:2])
    gpu = _gpu_run(project / "runs")
    # One line, exit 2, and nothing copied: not even the GPU run named before it.
    assert main(["promote", str(gpu), str(cpu)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert str(cpu) in line and "CPU smoke run" in line and "--allow-cpu" in line
    assert not (project / "results").exists()

    assert main(["promote", str(cpu), "--allow-cpu"]) == 0
    assert (project / "results" / cpu.name / results.ENV).is_file()  # copied, but not listed
    text = (project / "results" / index.INDEX).read_text()
    assert cpu.name not in text and "No run folder yet" in text


@pytest.mark.parametrize("problem", ["missing", "no env", "bad env", "published", "twice", "busy"])
def test_promote_refusals_are_one_line_and_change_nothing(project, capsys, problem):
    run = _gpu_run(project / "runs")
    argv = ["promote", str(run)]
    needle = str(run)
    if problem == "missing":
        argv, needle = ["promote", str(project / "runs" / "nope")], "no such folder"
    elif problem == "no env":
        (run / results.ENV).unlink()
        needle = "not a run folder"
    elif problem == "bad env":
        (run / results.ENV).write_text("{ not json")
    elif problem == "published":
        _gpu_run(project / "results")
        needle = "already exists"
    elif problem == "twice":
        other = _gpu_run(project / "runs" / "again")
        argv, needle = ["promote", str(run), str(other)], f"two folders named {run.name}"
    before = sorted(p.name for p in (project / "results").glob("*"))
    if problem == "busy":  # being written: refused, and the free run named first not copied
        free = _gpu_run(project / "runs", "20261130T000000Z_NVIDIA-H200_0157d67")
        with folders.locked(run):
            assert main(["promote", str(free), str(run)]) == 2
        needle = "being written"
    else:
        assert main(argv) == 2
    assert needle in _one_line(capsys.readouterr().err)
    assert sorted(p.name for p in (project / "results").glob("*")) == before
    assert main(["promote"]) == 2  # a run is required


def test_a_run_already_in_results_is_not_promoted_onto_itself(project, capsys):
    run = _gpu_run(project / "results")
    assert main(["promote", str(run)]) == 2
    assert "already in" in _one_line(capsys.readouterr().err)


def test_the_index_leaves_cpu_folders_out(project):
    res = project / "results"
    gpu = _gpu_run(res)
    write_run(res / "20261201T010000Z_cpu_nogit", small_grid()[:2])  # a CPU timing run
    nested = write_run(res / "sweep" / "20261201T020000Z_cpu_nogit", small_grid()[:2])
    assert [r.path for r in runs.run_folders(res)] == [gpu]
    # The README's run of record is a CPU run: the index names none, and does not fail.
    record = "<!-- ampbench:headline results/20261201T010000Z_cpu_nogit -->\n"
    (project / "README.md").write_text(record)
    text = index.render(res)
    assert "cpu_nogit" not in text and "| CPU" not in text and nested.name not in text
    assert "run of record" not in text
    assert f"[report]({gpu.name}/report.md)" in text


def test_run_bench_sh_passes_promote_through(project):
    run = _gpu_run(project / "runs")
    proc = subprocess.run(
        [str(paths.ROOT / "run_bench.sh"), "promote", str(run), "--results-dir", "pub"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        cwd=project,  # a relative --results-dir is taken from the caller's directory
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(project / "pub" / run.name)
    assert (project / "pub" / index.INDEX).is_file()
