"""How a command ended, in the file AMPBENCH_RESULT_JSON names (`bench.outcome`): written by the
command line for a run that passed, one that found a failure, bad input, an exception and Ctrl-C,
with the folder its job opened; nothing without the variable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import outcome
from bench.cli import main
from bench.measure import runner
from bench.publish import render


@pytest.fixture
def result(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "result.json"
    monkeypatch.setenv(outcome.RESULT_VAR, str(path))
    return path


def _run(results_dir: Path, *extra: str) -> int:
    """A tiny CPU run of one case: 2 steps, no warm-up, no overhead check."""
    argv = ["run", "--device", "cpu", "--modes", "fp32", "--batch-sizes", "4"]
    argv += ["--optimizers", "fused", "--steps", "2", "--warmup", "0", "--no-overhead"]
    return main([*argv, *extra, "--results-dir", str(results_dir)])


def _written(path: Path) -> dict:
    record = json.loads(path.read_text())
    assert set(record) == {"folder", "status", "exit", "error"}, record
    return record


def _only_folder(parent: Path) -> str:
    (folder,) = parent.iterdir()
    return str(folder.resolve())


def test_a_run_that_passed_names_its_folder(result, tmp_path):
    assert _run(tmp_path / "runs") == 0
    folder = _only_folder(tmp_path / "runs")
    assert _written(result) == {"folder": folder, "status": "ok", "exit": 0, "error": ""}
    assert outcome.read(result) == outcome.Outcome(folder=folder, status="ok", exit=0)


def test_a_run_where_no_case_passed_is_failed(result, tmp_path, monkeypatch):
    def broken(plan, **kwargs):
        raise RuntimeError("no")

    monkeypatch.setattr(runner, "build", broken)
    assert _run(tmp_path / "runs") == 1
    record = _written(result)
    assert (record["status"], record["exit"], record["error"]) == ("failed", 1, "")
    assert record["folder"] == _only_folder(tmp_path / "runs")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["run", "--steps", "0"], "--steps"),
        (["report", "x", "--no-such-option"], "unrecognized arguments: --no-such-option"),
        (["no-such-command"], "no-such-command"),
    ],
)
def test_bad_input_is_usage_and_exit_2(argv, needle, result, tmp_path, capsys):
    assert main(argv) == 2
    record = _written(result)
    assert (record["folder"], record["status"], record["exit"]) == (None, "usage", 2)
    line = capsys.readouterr().err.strip()
    assert needle in record["error"] and line == f"ampbench: error: {record['error']}"


def test_an_exception_is_error_with_its_line_and_the_folder_it_left(result, tmp_path, monkeypatch):
    def boom(run_dir):
        raise RuntimeError("boom\nthe second line is not kept")

    monkeypatch.setattr(render, "after_job", boom)
    with pytest.raises(RuntimeError, match="boom"):  # the traceback shows as before
        _run(tmp_path / "runs")
    assert _written(result) == {
        "folder": _only_folder(tmp_path / "runs"),
        "status": "error",
        "exit": 1,
        "error": "RuntimeError: boom",
    }


def test_ctrl_c_is_interrupted_with_the_folder_kept(result, tmp_path, monkeypatch):
    def interrupted(plan, ceilings):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_case", interrupted)
    assert _run(tmp_path / "runs") == 130
    record = _written(result)
    assert (record["status"], record["exit"]) == ("interrupted", 130)
    assert record["folder"] == _only_folder(tmp_path / "runs")
    assert record["error"].startswith("interrupted: 0 of 1 cases are kept")


def test_help_is_ok_and_nothing_is_written_without_the_variable(result, tmp_path, monkeypatch):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    assert _written(result) == {"folder": None, "status": "ok", "exit": 0, "error": ""}
    result.unlink()
    monkeypatch.delenv(outcome.RESULT_VAR)
    assert main(["report", "x", "--no-such-option"]) == 2 and not result.exists()


def test_a_process_that_ended_before_it_said_how_leaves_its_folder_alone(result, tmp_path):
    outcome.note_folder(tmp_path)
    assert outcome.read(result) == outcome.Outcome(folder=str(tmp_path.resolve()))
    assert outcome.read(tmp_path / "none.json") == outcome.Outcome()
    result.write_text("[1, 2")
    assert outcome.read(result) == outcome.Outcome()


def test_a_launcher_answers_for_its_ranks(result, tmp_path, monkeypatch):
    """`--gpus N`: the ranks write no result file (they would race each other and the launcher);
    the launcher notes the folder rank 0 named, and its own command line writes how it ended."""
    from bench.execution import launch

    run_dir, given = tmp_path / "run", {}

    def ranks(command, env):
        given.update(env)
        run_dir.mkdir(exist_ok=True)  # a relaunch (--resume) finds it
        Path(env[launch.RUN_DIR_VAR]).write_text(str(run_dir))  # as rank 0 does
        return 3

    monkeypatch.setattr(launch, "_run", ranks)
    assert launch.launch(2, ["run"], log=lambda msg: None) == 3
    assert outcome.RESULT_VAR not in given
    assert outcome.read(result) == outcome.Outcome(folder=str(run_dir.resolve()))
