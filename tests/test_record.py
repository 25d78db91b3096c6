"""`ampbench record` (docs/options.md): the tiny CPU record end to end in real processes, killed
mid-run and resumed; and, with a fake part runner (a part is a process of seconds), a call
killed after a part, a call at another commit refused, the status file read mid-run, the
budget's `not run`, and which commit `ab` compares with."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import outcome
from bench.cli import main
from bench.commands import record as command
from bench.faults import UsageError
from bench.jobs import record as job
from bench.store import record as store

ROOT = Path(__file__).resolve().parent.parent
COMMIT = "1111111aaaaaaa"
OTHER = "2222222bbbbbbb"


@pytest.fixture
def commit(monkeypatch, tmp_path):
    monkeypatch.setenv("AMPBENCH_GIT_COMMIT", COMMIT)
    monkeypatch.setenv("AMPBENCH_GIT_DIRTY", "0")
    monkeypatch.setenv("AMPBENCH_GIT_OVERRIDE", "1")  # git names this checkout's commit too
    # The previous record `ab` looks for is never one of the project's results/.
    monkeypatch.setattr(job.paths, "RESULTS", tmp_path / "published")


class Killed(Exception):
    """The call dies with its part running, as under SIGKILL: nothing marks the part ended."""


def fake(calls: list, *, kill_at: str | None = None, during=None):
    """A part runner: records (part, argv), makes the part's folder (complete unless the call
    is killed in it; under `--resume` the folder given) and says so as a command does
    (`bench.outcome`); `during(part, log_path)` runs while the part "runs"."""

    def runner(argv, log_path, env_vars, deadline):
        part = log_path.stem
        calls.append((part, list(argv)))
        if during is not None:
            during(part, log_path)
        made = None
        if "--resume" in argv:
            made = Path(argv[argv.index("--resume") + 1])
        elif "--results-dir" in argv:
            made = Path(argv[argv.index("--results-dir") + 1]) / f"{part}-folder"
        if made is not None:
            made.mkdir(parents=True, exist_ok=True)
            info = {"kind": "timing"} if part == kill_at else {"kind": "timing", "ended": "now"}
            (made / "env.json").write_text(json.dumps(info))
            Path(env_vars[outcome.RESULT_VAR]).write_text(json.dumps({"folder": str(made)}))
        if part == kill_at:
            raise Killed(part)
        return 0, ""

    return runner


def make(tmp_path, runner, budget_s: float = 0, clock=time.time) -> tuple[Path, store.Record]:
    cfg = job.RecordConfig(device="cpu", budget_s=budget_s)
    folder, complete = job.start(cfg, results_dir=tmp_path)
    assert not complete
    return folder, job.run(cfg, folder, command="test", runner=runner, clock=clock)


def statuses(folder: Path) -> dict[str, str]:
    return {p.name: p.status for p in store.read(folder).parts}


def test_a_killed_call_is_resumed_without_redoing_finished_parts(tmp_path, commit):
    calls = []
    with pytest.raises(Killed):
        make(tmp_path, fake(calls, kill_at="quality"))
    (folder,) = tmp_path.iterdir()
    # As a SIGKILL leaves it: the part it died in still `running`, the one before it done.
    assert statuses(folder)["run"] == store.DONE and statuses(folder)["quality"] == store.RUNNING
    studied = json.loads((folder / "logs" / "quality.outcome.json").read_text())["folder"]
    calls.clear()
    cfg = job.RecordConfig(device="cpu")
    again, complete = job.start(cfg, results_dir=tmp_path)
    assert again == folder and not complete
    rec = job.run(cfg, folder, command="test", runner=fake(calls))
    ran = [part for part, _ in calls]
    assert ran == ["quality", "replication", "sweep", "tests"]  # not `run` again
    quality = dict(calls)["quality"]
    assert quality[quality.index("--resume") + 1] == studied  # the study goes on
    assert rec.part("quality").attempts == 2 and rec.part("run").attempts == 1
    assert {p.name: p.status for p in rec.parts} == {
        "run": "done", "ab": "skipped", "quality": "done", "replication": "done",
        "sweep": "done", "tests": "done", "gpu-lane": "skipped",
    }  # fmt: skip
    assert rec.complete and len(rec.calls) == 2


def test_a_call_at_another_commit_is_refused_in_one_line(tmp_path, commit, monkeypatch, capsys):
    with pytest.raises(Killed):
        make(tmp_path, fake([], kill_at="run"))
    (folder,) = tmp_path.iterdir()
    before = (folder / store.RECORD_JSON).read_text()
    monkeypatch.setenv("AMPBENCH_GIT_COMMIT", OTHER)
    assert main(["record", "--device", "cpu", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and COMMIT[:7] in err[0] and OTHER[:7] in err[0], err
    assert (folder / store.RECORD_JSON).read_text() == before and len(list(tmp_path.iterdir())) == 1
    # --new starts a record of this commit beside it; a finished record of another commit
    # needs nothing: the next call starts one.
    new, _ = job.start(job.RecordConfig(device="cpu", new=True), results_dir=tmp_path)
    assert new != folder and store.read(new).commit == OTHER


def test_the_status_file_reads_right_mid_run(tmp_path, commit, capsys):
    seen = {}

    def during(part, log_path):
        if part != "quality":
            return
        with log_path.open("a") as f:
            f.write("ampbench: fp32 seed 1: ok\n")
        assert command.status(tmp_path) == 0
        seen["out"] = capsys.readouterr().out
        seen["txt"] = next(tmp_path.iterdir()).joinpath(store.STATUS_TXT).read_text()

    folder, _ = make(tmp_path, fake([], during=during), budget_s=3600)
    out = seen["out"].splitlines()
    assert f"at {COMMIT[:7]}: running; part 3/7 quality" in out[0]
    assert "1 done, 1 skipped" in out[0] and "s of the budget left" in out[0]
    left = float(out[0].split("; ")[-1].split(" s of")[0])
    assert 3000 < left <= 3600
    assert out[1] == "  last line: ampbench: fp32 seed 1: ok"
    assert "  run: done" in out and "  quality: running" in out
    assert seen["txt"].startswith(f"record {folder.name} at {COMMIT[:7]}: running; part 3/7")
    # Ended, it says so; a `running` status whose process is gone says that instead.
    assert ": ended" in (folder / store.STATUS_TXT).read_text()
    said = {**store.read_status(folder), "state": "running", "pid": 2**22 + 1}
    assert "not running (process" in store.status_line(said, alive=store.alive(said["pid"]))


def test_parts_that_cannot_start_in_the_time_left_are_not_run_until_the_next_call(tmp_path, commit):
    now = [1000.0]

    def during(part, log_path):
        now[0] += 50  # each part takes 50 s of a 60 s budget

    folder, rec = make(tmp_path, fake([], during=during), budget_s=60, clock=lambda: now[0])
    assert rec.part("run").status == store.DONE
    quality = rec.part("quality")
    assert quality.status == store.NOT_RUN and quality.why.startswith("10 s of the budget left")
    assert not rec.complete
    # The next call, with time, makes them; what was done stays done.
    calls = []
    cfg = job.RecordConfig(device="cpu")
    assert job.start(cfg, results_dir=tmp_path) == (folder, False)
    rec = job.run(cfg, folder, command="test", runner=fake(calls))
    assert [part for part, _ in calls] == ["quality", "replication", "sweep", "tests"]
    assert rec.complete


def test_a_part_stopped_at_the_budget_or_failing_says_so(tmp_path, commit):
    def run_part(argv, log_path, env_vars, deadline):
        if log_path.stem == "run":
            return 130, "stopped at the end of the budget"
        with log_path.open("a") as f:
            f.write("FAILED tests/test_x.py::test_y\n")
        return (1 if log_path.stem == "tests" else 0), ""

    _, rec = make(tmp_path, run_part)
    assert rec.part("run").status == store.STOPPED and "budget" in rec.part("run").why
    tests = rec.part("tests")
    assert tests.status == store.FAILED and tests.exit == 1
    assert tests.why == "exit 1: FAILED tests/test_x.py::test_y"
    assert "== exit 1 after" in (tmp_path.iterdir().__next__() / tests.log).read_text()
    assert not rec.complete  # the stopped run is made by the next call


def test_ab_compares_with_the_newest_record_of_another_commit(tmp_path, commit, monkeypatch):
    def record_of(name: str, sha: str) -> None:
        (tmp_path / name).mkdir()
        store.write(tmp_path / name, store.Record(sha, False, "cpu", "cpu", "then", parts=[]))

    folder, _ = job.start(job.RecordConfig(device="cpu"), results_dir=tmp_path)
    rec = store.read(folder)
    ab, entry = job.PARTS[1], rec.part("ab")
    assert job.plan(ab, rec, folder, entry, None).skip.startswith("no earlier record")
    record_of("20260101T000000Z_cpu_3333333_record", "3333333ccccccc")
    record_of("20260102T000000Z_cpu_4444444_record", "4444444ddddddd")  # the newest
    monkeypatch.setattr(job.ab, "repository", lambda: tmp_path)
    monkeypatch.setattr(job.ab, "resolve", lambda repo, rev: rev)
    argv = job.plan(ab, rec, folder, entry, None).argv
    assert argv[3:6] == ["ab", "4444444ddddddd", COMMIT]

    def no_history(repo, rev):
        raise UsageError(f"no commit {rev} here")

    monkeypatch.setattr(job.ab, "resolve", no_history)
    why = job.plan(ab, rec, folder, entry, None).skip
    assert (
        why
        == "20260102T000000Z_cpu_4444444_record is of 4444444, but no commit 4444444ddddddd here"
    )


@pytest.mark.slow
def test_the_tiny_record_runs_end_to_end_and_a_killed_call_resumes(tmp_path):
    """The CPU record in real processes: the first call stopped (SIGTERM, as `kill PID` stops a
    detached one) in its quality study, read by `--status` before; the second call goes on."""
    # `--compare-with none`: whatever records results/ holds, the test never times an `ab`.
    argv = [sys.executable, "-m", "bench", "record", "--device", "cpu", "--compare-with", "none",
            "--results-dir", str(tmp_path)]  # fmt: skip
    # The commit given, as the GPU boxes' driver gives it: a copy without .git runs it too.
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", "AMPBENCH_GIT_COMMIT": COMMIT,
                 "AMPBENCH_GIT_DIRTY": "0", "AMPBENCH_GIT_OVERRIDE": "1"}  # fmt: skip
    first = subprocess.Popen(
        argv, cwd=ROOT, env=child_env, start_new_session=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        said = None
        end = time.monotonic() + 300
        while time.monotonic() < end:
            if said is None and next(tmp_path.glob("*_record/status.json"), None) is not None:
                # Mid-run: a part is running (`--status` is a process of its own).
                said = subprocess.run(
                    [*argv[:4], "--status", "--results-dir", str(tmp_path)], cwd=ROOT,
                    capture_output=True, text=True,
                )  # fmt: skip
            # Stopped once the study has its folder (which the command notes as it opens it).
            noted = next(tmp_path.glob("*_record/logs/quality.outcome.json"), None)
            if (noted is not None and noted.read_text().strip()) or first.poll() is not None:
                break
            time.sleep(0.1)
        assert first.poll() is None, first.stdout.read()
        first.send_signal(signal.SIGTERM)
        out, _ = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert said.returncode == 0 and re.search(r": running; part [123]/7 ", said.stdout), said
    assert first.returncode == 143, out
    (folder,) = tmp_path.iterdir()
    rec = store.read(folder)
    assert rec.part("run").status == store.DONE and rec.part("quality").status == store.STOPPED
    run_started = rec.part("run").started
    assert ": stopped; 1 done, 1 skipped, 1 stopped" in (folder / store.STATUS_TXT).read_text()

    second = subprocess.run(argv, cwd=ROOT, env=child_env, capture_output=True, text=True)
    assert second.returncode == 0, second.stdout + second.stderr
    rec = store.read(folder)
    assert {p.name: p.status for p in rec.parts} == {
        "run": "done", "ab": "skipped", "quality": "done", "replication": "done",
        "sweep": "done", "tests": "done", "gpu-lane": "skipped",
    }, second.stdout  # fmt: skip
    assert rec.part("run").attempts == 1 and rec.part("run").started == run_started
    quality = rec.part("quality")
    # Resumed, or (a tiny study can end between the stop and its process's exit: seen once in CI)
    # its complete folder taken as done; the fake runner's test holds the resume itself.
    resumed = quality.attempts == 2 and "--resume" in quality.command
    assert resumed or (quality.attempts == 1 and quality.status == store.DONE), quality
    for name in ("quality", "replication"):
        assert (folder / rec.part(name).folder / "replication.md").is_file()
    assert (folder / rec.part("sweep").folder / "sweep.md").is_file()
    assert "== exit 0 after" in (folder / rec.part("tests").log).read_text()
    assert second.stdout.strip().splitlines()[-1] == str(folder)


def test_every_part_on_a_gpu_is_a_command_line_ampbench_takes(tmp_path, commit, monkeypatch):
    """The GPU's command lines, parsed by the program's own parser (a misspelt option would be
    one line and exit 2 on the GPU box, after the device time it took to get there); the
    scripts they run are there to run."""
    from bench.cli import build_parser

    monkeypatch.setattr(job.ab, "repository", lambda: tmp_path)
    monkeypatch.setattr(job.ab, "resolve", lambda repo, rev: rev)
    rec = store.Record(COMMIT, False, "cuda", "NVIDIA H100", "now",
                       parts=[store.Entry(p.name, p.what) for p in job.PARTS])  # fmt: skip
    parser = build_parser()
    for part in job.PARTS:
        step = job.plan(part, rec, tmp_path, rec.part(part.name), 900.0, "v0")
        assert not step.skip, part.name
        if step.argv[1:3] == ["-m", "bench"]:
            args, rest = parser.parse_known_args(step.argv[3:])
            assert args.command == step.argv[3] and (not rest or args.command == "ab"), rest
            if part.budget:
                assert args.budget == 900.0 and args.max_seeds == 8
        else:
            assert os.access(ROOT / step.argv[0], os.X_OK), step.argv
    ab_args = job.plan(job.PARTS[1], rec, tmp_path, rec.part("ab"), None, "v0").argv
    run_args, rest = parser.parse_known_args(["run", *ab_args[6:]])
    assert not rest and run_args.modes == ["fp32", "tf32", "fp16-amp", "bf16-amp", "bf16-pure"]
