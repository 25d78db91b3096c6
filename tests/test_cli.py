"""The command line: bad input exits 2 with one line and leaves no folder; a tiny run end to end."""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bench import cli
from bench.cli import command_line as _command_line
from bench.cli import main
from bench.faults import UsageError, fault_status
from bench.measure import runner
from bench.publish import index, plots, report
from bench.store import folders, paths, results
from tests.conftest import tiny_case

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["run", "--modes", "fp32,fp8"], "'fp8'"),
        (["run", "--preset", "huge"], "'huge'"),
        (["run", "--batch-sizes", "64,0"], "'0'"),
        (["run", "--batch-sizes", "abc"], "'abc'"),
        (["run", "--optimizers", "sgd"], "'sgd'"),
        (["run", "--steps", "-3"], "'-3'"),
        (["run", "--device", "tpu"], "'tpu'"),
        (["bogus"], "'bogus'"),
        (["numerics", "--add-modes", "bf16-pure"], "--add-modes goes with --resume"),
        (["numerics", "--add-modes", "fp9"], "'fp9'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, tmp_path, capsys):
    code = main([*argv, "--results-dir", str(tmp_path)] if argv[0] == "run" else argv)
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and needle in err
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU refusal")
def test_cuda_request_without_gpu(tmp_path, capsys):
    assert main(["run", "--device", "cuda", "--results-dir", str(tmp_path)]) == 2
    assert "--device cuda" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_resume_refuses_grid_flags_and_missing_runs(tmp_path, capsys):
    assert main(["run", "--resume", str(tmp_path / "nope")]) == 2
    assert main(["run", "--resume", str(tmp_path), "--modes", "fp32"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "no such folder" in err[0] and "drop --modes" in err[1]


def _tiny_run(tmp_path, *extra):
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        [
            str(ROOT / "run_bench.sh"),
            "--device",
            "cpu",
            "--modes",
            "fp32,bf16-amp",
            "--batch-sizes",
            "4,8",
            "--steps",
            "3",
            "--warmup",
            "1",
            "--results-dir",
            str(tmp_path),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_run_bench_end_to_end_and_resume(tmp_path):
    project_index = paths.RESULTS / index.INDEX

    def state():
        return project_index.stat().st_mtime_ns if project_index.exists() else None

    before = state()
    proc = _tiny_run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert "CPU smoke run" in proc.stderr
    assert {p.name for p in run_dir.iterdir()} == {
        folders.LOCK,
        results.ROWS,
        results.SAMPLES,
        results.ENV,
        results.CSV,
        results.REPORT,
        *plots.FILES.values(),
    }
    # A run outside the project's results/ leaves the project's index alone.
    assert state() == before
    assert "updated" not in proc.stderr
    df = results.load(run_dir)
    assert len(df) == 8 and set(df["status"]) == {"ok"}
    env = results.read_env(run_dir)
    chosen = {tuple(ov["case_id"].split("/")[:3]) for ov in env["overhead"]}
    assert chosen == {("bf16-amp", o, f"b{b}") for o in ("foreach", "fused") for b in (4, 8)}
    assert all(ov["harness_ms"] > 0 and ov["bare_ms"] > 0 for ov in env["overhead"])
    assert env["ceilings"]["copy_gbps"] > 0

    # Drop the last two cases as if the run had been killed, then resume it.
    lines = (run_dir / results.ROWS).read_text().splitlines()
    (run_dir / results.ROWS).write_text("\n".join(lines[:-2]) + "\n")
    proc = subprocess.run(
        [str(ROOT / "run_bench.sh"), "run", "--resume", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("[7/8]") == 1 and "[1/8]" not in proc.stderr
    assert len(results.load(run_dir)) == 8
    assert "resumed" in results.read_env(run_dir)


# Hardening: what a new user or a hostile tester tries (each with its own test).


def _run(results_dir, *extra, modes="fp32,bf16-amp", sizes="4,8", overhead=False):
    """A tiny CPU run: fused Adam, 2 steps, no warm-up (overhead measured only when asked)."""
    argv = ["run", "--device", "cpu", "--modes", modes, "--batch-sizes", sizes]
    argv += ["--optimizers", "fused", "--steps", "2", "--warmup", "0"]
    argv += [] if overhead else ["--no-overhead"]
    return main([*argv, *extra, "--results-dir", str(results_dir)])


def _only_folder(parent):
    (folder,) = [p for p in parent.iterdir() if p.is_dir()]
    return folder


@pytest.fixture(scope="module")
def _made_once(tmp_path_factory):
    parent = tmp_path_factory.mktemp("tiny")
    assert _run(parent) == 0
    return _only_folder(parent)


@pytest.fixture
def tiny_folder(_made_once, tmp_path):
    """A finished `_run` folder (4 cases) of this test's own, to damage or resume: a copy of one
    run made once for the module, under the same name."""
    return Path(shutil.copytree(_made_once, tmp_path / _made_once.name))


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_resume_at_another_commit_is_refused_unless_forced(tiny_folder, capsys, monkeypatch):
    run_dir = tiny_folder
    lines = (run_dir / results.ROWS).read_text().splitlines()
    (run_dir / results.ROWS).write_text("\n".join(lines[:2]) + "\n")
    capsys.readouterr()
    monkeypatch.setenv("AMPBENCH_GIT_COMMIT", "f" * 40)
    monkeypatch.setenv("AMPBENCH_GIT_OVERRIDE", "1")  # honoured where git names a commit too
    assert main(["run", "--resume", str(run_dir)]) == 2
    assert "commit" in _one_line(capsys.readouterr().err)
    assert len(results.read_jsonl(run_dir / results.ROWS)) == 2  # nothing changed
    assert main(["run", "--resume", str(run_dir), "--force"]) == 0
    forced = results.read_env(run_dir)["resumed"][-1]["forced"]
    assert forced and forced[0].startswith("commit")


def test_a_truncated_last_line_is_repaired_on_resume(tiny_folder):
    run_dir = tiny_folder
    rows = (run_dir / results.ROWS).read_text().splitlines()
    (run_dir / results.ROWS).write_text("\n".join(rows[:2]) + "\n" + rows[2][:25])
    assert main(["run", "--resume", str(run_dir)]) == 0
    df = results.load(run_dir)
    assert len(df) == 4 and set(df["status"]) == {"ok"}
    assert (run_dir / (results.ROWS + ".partial")).read_text() == rows[2][:25] + "\n"
    assert main(["report", str(run_dir)]) == 0 and main(["headline", str(run_dir)]) == 0


def test_a_row_whose_samples_were_never_written_is_run_again(tiny_folder, capsys):
    run_dir = tiny_folder
    samples = (run_dir / results.SAMPLES).read_text().splitlines()
    (run_dir / results.SAMPLES).write_text("\n".join(samples[:-1]) + "\n")
    capsys.readouterr()
    assert main(["run", "--resume", str(run_dir)]) == 0
    assert capsys.readouterr().err.count("[4/4]") == 1
    assert len(results.load_samples(run_dir)["case_id"].unique()) == 4


def test_a_folder_being_written_refuses_a_second_process(tiny_folder, capsys):
    run_dir = tiny_folder
    capsys.readouterr()
    with folders.locked(run_dir):
        assert main(["run", "--resume", str(run_dir)]) == 2
    assert "being written by pid" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("flag", [["--no-overhead"], ["--results-dir", "x"], ["--steps", "3"]])
def test_resume_refuses_every_flag_it_does_not_honour(tmp_path, capsys, flag):
    assert main(["run", "--resume", str(tmp_path), *flag]) == 2
    assert f"drop {flag[0]}" in _one_line(capsys.readouterr().err)


def test_bad_folders_are_one_line_errors(tiny_folder, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("")
    assert _run(afile) == 2
    assert "not a directory" in _one_line(capsys.readouterr().err)
    good = tiny_folder
    for damage in ("garbage", "empty", "env"):
        broken = tmp_path / damage
        shutil.copytree(good, broken)
        if damage == "garbage":
            with (broken / results.ROWS).open("r+") as f:
                f.write("xx")
        elif damage == "empty":
            (broken / results.ROWS).write_text("")
        else:
            (broken / results.ENV).write_text("{ not json")
        for command in (["headline", str(broken)], ["compare", str(good), str(broken)]):
            capsys.readouterr()
            assert main(command) == 2, (damage, command)
            assert str(broken) in _one_line(capsys.readouterr().err)
        assert main(["report", str(broken)]) == 2  # an empty run has no report to render


def test_run_resume_of_a_numerics_folder_is_refused(tmp_path, capsys):
    (tmp_path / results.ENV).write_text(json.dumps({"device": "cpu", "numerics_config": {}}))
    assert main(["run", "--resume", str(tmp_path)]) == 2
    assert "numerics study" in _one_line(capsys.readouterr().err)


def test_ctrl_c_is_one_line_with_the_resume_command(tmp_path, capsys, monkeypatch):
    real = runner.run_case
    calls = []

    def interrupted_on_third(plan, ceilings):
        calls.append(plan)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(plan, ceilings)

    monkeypatch.setattr(runner, "run_case", interrupted_on_third)
    assert _run(tmp_path) == 130
    err = capsys.readouterr().err
    run_dir = _only_folder(tmp_path)
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert "2 of 4 cases are kept" in last and f"./run_bench.sh --resume {run_dir}" in last


def test_relative_paths_are_taken_from_the_callers_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("AMPBENCH_CWD", str(tmp_path))
    assert _run("rel", modes="fp32", sizes="4") == 0
    assert (tmp_path / "rel").is_dir() and len(list((tmp_path / "rel").iterdir())) == 1


def test_a_run_where_no_case_passes_says_so_and_exits_1(tmp_path, monkeypatch):
    def broken(plan, **kwargs):
        raise RuntimeError("no")

    monkeypatch.setattr(runner, "build", broken)
    assert _run(tmp_path) == 1
    text = (_only_folder(tmp_path) / results.REPORT).read_text()
    assert "**Cases: 0 of 4 ok** (4 error)." in text and "No case passed" in text


def test_a_cpu_out_of_memory_is_oom():
    assert (
        fault_status(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried")) == "oom"
    )
    assert fault_status(MemoryError()) == "oom"
    assert fault_status(RuntimeError("shape mismatch")) == "error"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["run", "--modes", "fp32,fp32"], "'fp32' is listed twice"),
        (["numerics", "--lr", "inf"], "'inf'"),
        (["numerics", "--lr", "nan"], "'nan'"),
        (["maxbatch", "--resolution", "1.5"], "'1.5'"),
    ],
)
def test_more_bad_values_are_named(argv, needle, tmp_path, capsys):
    assert main([*argv, "--results-dir", str(tmp_path)]) == 2
    assert needle in _one_line(capsys.readouterr().err)
    assert not any(tmp_path.iterdir())


def test_numerics_help_shows_both_devices_defaults(capsys):
    # Without importing torch the parser cannot know the device: it shows both, where they differ.
    with pytest.raises(SystemExit):
        main(["numerics", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "default 0.0003" in out and "default 1000 on a GPU, 40 on the CPU" in out


def test_cpu_smoke_report_judges_no_target_and_prints_no_nan(tmp_path):
    sizes = {"modes": "bf16-amp,fp16-amp-noscale", "sizes": "4096", "overhead": True}
    assert _run(tmp_path, "--preset", "tiny", **sizes) == 0
    run_dir = _only_folder(tmp_path)
    text = (run_dir / results.REPORT).read_text()
    assert "MISSED" not in text and "target" not in text
    assert "Not measured on the CPU, so `–`: peak memory" in text and "nan" not in text
    assert results.read_env(run_dir)["cuda"] is None
    # No matmul ceiling on the CPU, so no matmul floor and no share of it; the optimizer's is.
    assert not any(k.startswith("matmul_tflops") for k in results.read_env(run_dir)["ceilings"])
    df = results.load(run_dir)
    assert df["pct_of_floor"].isna().all() and (df["step_floor_ms"] > 0).all()


def test_run_bench_help_lists_the_commands():
    proc = subprocess.run(
        [str(ROOT / "run_bench.sh"), "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0
    for command in ("run", "compare", "report", "headline", "numerics", "maxbatch", "pytest"):
        assert command in proc.stdout
    for command in ("index", "history", "export", "readme"):
        assert command in proc.stdout


def test_the_recorded_command_shows_project_paths_relative_to_the_project(monkeypatch):
    # As run_bench.sh passes it: the directory the user typed the command in.
    monkeypatch.setenv("AMPBENCH_CWD", str(paths.ROOT / "scripts"))
    inside = str(paths.ROOT / "results" / "x")
    argv = ["run", "--results-dir", inside, "--resume=../results/y", "--modes", "fp32"]
    assert _command_line(argv) == (
        "python -m bench run --results-dir results/x --resume=results/y --modes fp32"
    )
    assert _command_line(["run", "--results", "../results"]) == (
        "python -m bench run --results results"  # an abbreviation argparse accepts
    )
    # Outside the project a results directory is the machine's own: the command names the
    # reader's with a placeholder, and a folder in one by its name under it.
    outside = str(Path("/tmp/elsewhere/results").resolve())
    assert _command_line(["numerics", "--results-dir", outside, "--tag", "a"]) == (
        "python -m bench numerics --results-dir RESULTS_DIR --tag a"
    )
    assert _command_line(["run", f"--results-dir={outside}", "--resume", f"{outside}/r1"]) == (
        "python -m bench run --results-dir=RESULTS_DIR --resume RESULTS_DIR/r1"
    )
    assert "/tmp" not in _command_line(["run", "--results", outside])  # abbreviated
    # The command left out (`ampbench --modes fp32`) is recorded with it.
    assert _command_line(["--modes", "fp32"]) == "python -m bench run --modes fp32"


@pytest.mark.parametrize("inside", [True, False])
def test_a_recorded_command_re_runs_as_written_from_the_project_root(inside, tmp_path, monkeypatch):
    target = (paths.ROOT / "results" / "x") if inside else (tmp_path / "res")
    monkeypatch.setenv("AMPBENCH_CWD", str(tmp_path))  # typed somewhere else
    typed = os.path.relpath(target, tmp_path)
    recorded = _command_line(["numerics", "--results-dir", typed, "--tag", "t"])
    # Re-run as written, from the project root: the same folder inside the project, the
    # reader's own RESULTS_DIR outside it; the same settings. No path of this machine is kept.
    monkeypatch.setenv("AMPBENCH_CWD", str(paths.ROOT))
    argv = shlex.split(recorded)[3:]
    args = cli.build_parser().parse_args(argv)
    want = target if inside else paths.ROOT / paths.RESULTS_DIR
    assert args.results_dir.resolve() == want.resolve() and args.tag == "t"
    assert not Path(argv[2]).is_absolute() and str(tmp_path) not in recorded


def test_argv_notes_hide_machine_paths_and_reports_show_commands_that_re_run():
    # env.json's argv lists are notes: a path of the machine is shown by its name.
    argv = [str(paths.ROOT / "bench" / "__main__.py"), "run", "--results-dir=/tmp/s/res", "/x/y"]
    assert paths.shown_argv(argv) == ["bench/__main__.py", "run", "--results-dir=res", "y"]
    # A report shows the recorded command as it re-runs; a project path recorded whole by an
    # older version is shown relative to the project.
    old = f"python -m bench run --results-dir {paths.ROOT / 'results'} --tag 'a b'"
    assert paths.shown_command(old) == "python -m bench run --results-dir results --tag 'a b'"
    # One recorded whole outside the project shows the placeholder: it re-runs as written on
    # the reader's machine, with their own results directory.
    tmp = "python -m bench numerics --results-dir /tmp/n/results --tag 'a b' --resume=/root/o/r"
    assert paths.shown_command(tmp) == (
        "python -m bench numerics --results-dir RESULTS_DIR --tag 'a b' --resume=RESULTS_DIR/r"
    )


def test_more_damage_is_one_line(tiny_folder, tmp_path, capsys):
    good = tiny_folder
    capsys.readouterr()
    # A recorded grid that no longer makes cases.
    bad_grid = tmp_path / "grid"
    shutil.copytree(good, bad_grid)
    info = results.read_env(bad_grid)
    info["config"]["modes"] = ["fp64"]
    results.write_env(bad_grid, info)
    assert main(["run", "--resume", str(bad_grid)]) == 2
    assert "recorded grid is not usable" in _one_line(capsys.readouterr().err)
    # A line that is JSON but not a row.
    not_a_row = tmp_path / "row"
    shutil.copytree(good, not_a_row)
    with (not_a_row / results.ROWS).open("a") as f:
        f.write("[1, 2]\n{}\n")
    for command in (["report", str(not_a_row)], ["headline", str(not_a_row)]):
        assert main(command) == 2
        assert "is not a JSON object" in _one_line(capsys.readouterr().err)
    (not_a_row / results.ROWS).write_text('{"status": "ok"}\n{}\n')
    assert main(["headline", str(not_a_row)]) == 2
    assert "row 1 has no case_id" in _one_line(capsys.readouterr().err)
    # A file where a folder should be, and an output nobody can write.
    afile = tmp_path / "afile"
    afile.write_text("")
    assert main(["report", str(afile)]) == 2
    assert str(afile) in _one_line(capsys.readouterr().err)
    out = tmp_path / "no" / "such" / "x.json"
    assert (
        main(["export", str(good), "--format", "github-action-benchmark", "--output", str(out)])
        == 2
    )
    assert "cannot write" in _one_line(capsys.readouterr().err)


def test_the_overhead_check_runs_at_the_smallest_and_largest_batch_with_each_optimizer():
    from bench.jobs.session import overhead_cases

    cases = [
        tiny_case(mode=m, variant=v, optimizer=o, batch_size=b)
        for m in ("fp32", "bf16-amp")
        for v in ("eager", "compile")
        for o in ("foreach", "fused")
        for b in (4, 8, 16)
    ]
    chosen = {(c.mode, c.variant, c.optimizer, c.batch_size) for c in overhead_cases(cases)}
    assert chosen == {("bf16-amp", "eager", o, b) for o in ("foreach", "fused") for b in (4, 16)}
    assert overhead_cases([c for c in cases if c.variant == "compile"]) == []
    only_fp32 = [c for c in cases if c.mode == "fp32" and c.variant == "eager"]
    assert {c.mode for c in overhead_cases(only_fp32)} == {"fp32"}


# One entry point: `ampbench`, `python -m bench` and `./run_bench.sh` parse alike.


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], ["run"]),
        (["--preset", "tiny"], ["run", "--preset", "tiny"]),
        (["--help"], ["--help"]),
        (["--version"], ["--version"]),
        (["report", "x"], ["report", "x"]),
    ],
)
def test_no_command_runs_run(argv, expected):
    assert cli.with_command(argv) == expected


def test_options_alone_run_a_run_and_usage_says_ampbench(tmp_path, capsys):
    argv = ["--device", "cpu", "--modes", "fp32", "--batch-sizes", "4", "--optimizers", "fused"]
    argv += ["--steps", "1", "--warmup", "0", "--no-overhead", "--results-dir", str(tmp_path)]
    assert main(argv) == 0
    info = results.read_env(_only_folder(tmp_path))
    assert info["command"].startswith("python -m bench run --device cpu")
    capsys.readouterr()
    assert main(["--preset", "huge"]) == 2
    assert "'huge'" in _one_line(capsys.readouterr().err)  # the run's option, not a command
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert capsys.readouterr().out.startswith("usage: ampbench run")


def test_version_is_the_packages_or_pyprojects(capsys, monkeypatch):
    import importlib.metadata
    import re

    version = re.search(r'^version = "(.+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"ampbench {version}\n"

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert cli.version() == version


def test_new_folders_go_to_the_projects_folder_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AMPBENCH_CWD", raising=False)
    for command in ("run", "numerics", "maxbatch"):
        args = cli.build_parser().parse_args([command])
        default = args.results_dir
        assert default == paths.default_results() and default.parent == paths.ROOT
    args = cli.build_parser().parse_args(["run", "--results-dir", "here"])
    assert args.results_dir.resolve() == tmp_path / "here"


# Option names agree across commands; old spellings still parse.


def test_option_spellings_agree_across_commands():
    parse = cli.build_parser().parse_args
    assert parse(["run", "--optimizer", "fused"]).optimizers == ["fused"]
    assert parse(["run", "--optimizers", "foreach,fused"]).optimizers == ["foreach", "fused"]
    for command in ("numerics", "maxbatch"):
        assert parse([command, "--optimizers", "foreach"]).optimizer == "foreach"
        assert parse([command, "--optimizer", "foreach"]).optimizer == "foreach"
    for command in ("run", "numerics", "maxbatch"):
        assert parse([command, "--tag", "a.b-1"]).tag == "a.b-1"
    assert parse(["export", "RUN"]).format == "github-action-benchmark"
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        for action in parser._actions:
            assert action.help or not action.option_strings, (name, action.option_strings)


@pytest.mark.parametrize("command", ["run", "numerics", "maxbatch"])
def test_a_bad_tag_is_one_line(command, tmp_path, capsys):
    assert main([command, "--tag", "a b", "--results-dir", str(tmp_path)]) == 2
    assert "'a b'" in _one_line(capsys.readouterr().err)
    assert not any(tmp_path.iterdir())


def test_a_tag_ends_the_folder_name_of_a_run_and_a_maxbatch(tmp_path):
    assert _run(tmp_path / "run", "--tag", "smoke", modes="fp32", sizes="4") == 0
    assert _only_folder(tmp_path / "run").name.endswith("_smoke")
    argv = ["maxbatch", "--device", "cpu", "--modes", "fp32", "--start", "4", "--limit", "8"]
    argv += ["--steps", "1", "--warmup", "0", "--tag", "t1", "--results-dir", str(tmp_path / "m")]
    assert main(argv) == 0
    assert _only_folder(tmp_path / "m").name.endswith("_maxbatch_t1")


def test_the_parsers_choices_are_the_tables():
    """Each option takes every row of its table, read from the table itself (a mode run only when
    asked for too), and `--format`'s choices are the formats table's keys."""
    from bench.ground import axes, catalog, optimizers
    from bench.publish import formats

    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    fmt = next(a for a in sub.choices["export"]._actions if a.dest == "format")
    assert fmt.choices == tuple(formats.FORMATS)
    parse = cli.build_parser().parse_args
    for option, table in (
        ("--modes", catalog.CARDS),
        ("--optimizers", optimizers.OPTIMIZERS),
        ("--variants", axes.VARIANTS),
        ("--parallel", axes.PARALLELS),
    ):
        parsed = vars(parse(["run", option, ",".join(table)]))
        assert list(table) in parsed.values(), option
    assert [m for m in catalog.CARDS if m not in catalog.default_modes()] == ["fp16-pure"]
    only_full = [m for m in catalog.default_modes() if m not in catalog.default_modes(full=False)]
    assert only_full == ["bf16-pure-sr", "fp8-rowwise"]
    assert parse(["run", "--full"]).full is True and not parse(["run"]).full


# Quick help: parsing and reading folders import no torch.

_IMPORTS = """
import sys
from bench.cli import main
for argv in sys.argv[1:]:
    try:
        main(argv.split("|"))
    except SystemExit:
        pass
print(sorted(m for m in ("torch", "pandas", "matplotlib", "scipy") if m in sys.modules))
"""


def _imports(*commands: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORTS, *commands],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_help_imports_nothing_heavy():
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert _imports("--help", "--version", *(f"{name}|--help" for name in sub.choices)) == []


def test_reading_a_folder_imports_no_torch(tmp_path):
    from tests import stored

    run = str(stored.write_run(tmp_path / "run", [stored.timing_row(mode="fp32")]))
    criteria = tmp_path / "c.toml"
    criteria.write_text('[[criterion]]\nname = "a"\nexpect = "total_ms > 0"\n')
    loaded = _imports(
        f"report|{run}",
        f"headline|{run}",
        f"export|{run}",
        f"compare|{run}|{run}|--no-write",
        f"check|{run}|--criteria|{criteria}",
        f"index|--results-dir|{tmp_path}|--check",
    )
    assert "torch" not in loaded and "pandas" in loaded
    assert (tmp_path / "run" / results.REPORT).is_file()


def test_reading_a_largest_batch_folder_imports_no_torch(tmp_path):
    folder = tmp_path / "20261129T150000Z_x_maxbatch"
    folder.mkdir()
    cfg = {"preset": "tiny", "optimizer": "fused", "start": 8, "limit": 64, "resolution": 0.0625}
    results.write_env(folder, {"device": "cuda", "gpu": "x", "maxbatch_config": cfg})
    for bs, status in ((8, "ok"), (16, "oom")):
        trial = {"mode": "fp32", "variant": "eager", "batch_size": bs, "status": status}
        trial |= {"samples_per_s": 100.0 * bs, "peak_alloc_gib": bs / 8, "error": ""}
        results.append_jsonl(folder / "trials.jsonl", trial)
    assert "torch" not in _imports(f"report|{folder}")
    text = (folder / results.REPORT).read_text()
    assert "memory: out of memory at batch 16" in text


# Refused up front: a grid of which nothing can run, more ranks than the machine holds.


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--parallel", "ddp"], "--parallel ddp: ddp needs several ranks"),
        (["--variants", "cudagraph", "--device", "cpu"], "--variants cudagraph: CUDA graphs"),
        (["--modes", "fp8-rowwise", "--device", "cpu"], "--modes fp8-rowwise: fp8-rowwise:"),
    ],
)
def test_a_grid_where_nothing_can_run_is_refused_before_any_folder(argv, needle, tmp_path, capsys):
    assert main(["run", *argv, "--results-dir", str(tmp_path)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert needle in line and "no case of this grid can run here" in line
    assert not any(tmp_path.iterdir())


def test_more_ranks_than_the_machine_holds_are_refused(tmp_path, capsys, monkeypatch):
    from bench.execution import launch

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert main(["run", "--device", "cpu", "--gpus", "3", "--results-dir", str(tmp_path)]) == 2
    assert "--oversubscribe" in _one_line(capsys.readouterr().err)
    assert not any(tmp_path.iterdir())
    launch.check_ranks(2, "cpu")  # what tests/test_distributed.py starts
    launch.check_ranks(3, "cpu", oversubscribe=True)
    if not torch.cuda.is_available():
        with pytest.raises(UsageError, match="--gpus 2 but 0 GPU"):
            launch.check_ranks(2, "cuda", oversubscribe=True)


# The CPU's default grid: what cannot run there is left out, named once.


def test_the_cpu_default_grid_leaves_out_what_cannot_run_and_says_why():
    from bench.ground.catalog import default_modes
    from bench.jobs.configs import run_config

    cfg = run_config(device="cpu", preset=None, full=True)
    assert "fp8-tensorwise" in cfg.left_out and "fp8-rowwise" in cfg.left_out
    assert "CUDA GPU" in cfg.left_out["fp8-rowwise"]
    assert set(cfg.modes) | set(cfg.left_out) == set(default_modes()) and "fp32" in cfg.modes
    assert not set(cfg.modes) & set(cfg.left_out)
    # The default grid leaves the modes of the full grid out altogether.
    quick = run_config(device="cpu", preset=None)
    assert set(quick.modes) | set(quick.left_out) == set(default_modes(full=False))
    assert "fp8-rowwise" not in quick.left_out and "fp8-tensorwise" in quick.left_out
    # Asked for by name, a mode is in the grid and becomes an `unsupported` row.
    asked = run_config(device="cpu", preset=None, modes=["fp32", "fp8-rowwise"])
    assert asked.modes == ("fp32", "fp8-rowwise") and asked.left_out == {}
    note = report._cpu_note(cfg.left_out)
    assert note.count("fp8-rowwise") == 1 and "float8 matmuls need a CUDA GPU" in note
