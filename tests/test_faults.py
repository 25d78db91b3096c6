"""Failures a user can act on: every row a fault ended keeps its full traceback in its folder
(`errors/`) and the report says where; `--debug` raises the first fault instead of recording it;
a numerics study where anything failed exits 1 naming it; a study's report says in one line what
it could not measure."""

import json
import os
import re

import pandas as pd
import pytest
import torch

from bench.cli import main
from bench.execution import launch
from bench.faults import DEBUG_VAR, TRACEBACK_TEXT, debug, debugging, fault
from bench.jobs import maxbatch
from bench.jobs.maxbatch import MaxBatchConfig
from bench.jobs.suite import run_suite
from bench.measure import ranks, runner
from bench.numerics.analysis import failures
from bench.numerics.measure import audit, tables, training
from bench.numerics.measure.config import NumericsConfig
from bench.numerics.render import report
from bench.plan.plan import modes_of, resolve
from bench.publish import render
from bench.publish import report as timing_report
from bench.store import errors, results
from tests.conftest import tiny_case
from tests.studies import start_study


def _raise(exc: BaseException):
    def fail(*args, **kwargs):
        raise exc

    return fail


def test_a_fault_is_its_status_its_line_and_its_traceback():
    try:
        _raise(RuntimeError("cuBLAS said no\nsecond line"))()
    except RuntimeError as exc:
        out = fault(exc, prefix="step 3: ")
    assert out["status"] == "error" and out["error"] == "step 3: RuntimeError: cuBLAS said no"
    text = out[TRACEBACK_TEXT]
    assert text.startswith("Traceback (most recent call last):")
    assert "in fail" in text and text.rstrip().endswith("second line")


def test_a_row_keeps_its_traceback_in_a_file_it_names(tmp_path):
    row = {"case_id": "fp32/foreach/b8/pkg.mod:make/cpu/s0", "status": "error", "error": "E: x"}
    kept = errors.keep(tmp_path, {**row, TRACEBACK_TEXT: "Traceback ...\nE: x\n"}, row["case_id"])
    assert kept == {**row, "traceback": "errors/fp32_foreach_b8_pkg.mod_make_cpu_s0.txt"}
    assert (tmp_path / kept["traceback"]).read_text() == "Traceback ...\nE: x\n"
    assert errors.keep(tmp_path, row, "x") == row  # nothing to keep
    long = [errors.file_name(f"{'x' * 300}/{seed}") for seed in (0, 1)]
    assert long[0] != long[1] and all(len(name) == errors.LONGEST + 4 for name in long)
    assert errors.where([float("nan"), ""]) == []
    assert "`errors/`" in errors.where([float("nan"), kept["traceback"]])[0]


def test_a_failed_case_keeps_its_traceback_in_the_run_folder(monkeypatch, tmp_path, cpu_ceilings):
    real_build = runner.build

    def broken_for_bf16(plan, **kwargs):
        if plan.case.mode == "bf16-amp":
            raise RuntimeError("cuBLAS said no\nsecond line")
        return real_build(plan, **kwargs)

    monkeypatch.setattr(runner, "build", broken_for_bf16)
    cases = [tiny_case(mode=m) for m in ("fp32", "bf16-amp")]
    logged = []
    run_suite([resolve(c) for c in cases], tmp_path, cpu_ceilings, log=logged.append)
    ok, bad = results.read_rows(tmp_path / results.ROWS)
    assert "traceback" not in ok and TRACEBACK_TEXT not in bad
    assert (bad["status"], bad["error"]) == ("error", "RuntimeError: cuBLAS said no")
    assert bad["traceback"] == "errors/bf16-amp_foreach_b8_32x64x10_cpu_s0.txt"
    text = (tmp_path / bad["traceback"]).read_text()
    assert "in broken_for_bf16" in text and "runner.py" in text
    assert str(tmp_path / bad["traceback"]) in logged[-1]
    env = {"device": "cpu", "gpu": "cpu", "config": {}, "ceilings": cpu_ceilings.record()}
    page = timing_report.render(results.load(tmp_path), env, {})
    assert "The full traceback of each failure is in `errors/`" in page


def test_a_case_that_failed_on_several_ranks_keeps_each_ranks_traceback(tmp_path):
    rows = [
        {"case_id": "c", "status": "timeout", "error": "T: a", TRACEBACK_TEXT: "tb of 0\n"},
        {"case_id": "c", "status": "error", "error": "E: b", TRACEBACK_TEXT: "tb of 1\n"},
    ]
    row, _, _ = ranks.merge([(r, {}) for r in rows])
    assert row["error"] == "rank 1: E: b; rank 0: T: a"  # the real failure first
    assert row[TRACEBACK_TEXT] == "rank 1:\ntb of 1\n\nrank 0:\ntb of 0\n"
    # A run that ended during the case: the launcher writes it from the ranks' notes.
    launch.mark_inflight(tmp_path, {"case_id": "a/b", "status": "timeout", "error": ""})
    launch.note_fault(tmp_path, 1, {**rows[1], "case_id": "a/b"})
    assert launch.complete_inflight(tmp_path, "the run ended")
    (written,) = results.read_rows(tmp_path / results.ROWS)
    assert written["traceback"] == "errors/a_b.txt" and TRACEBACK_TEXT not in written
    assert (tmp_path / "errors" / "a_b.txt").read_text() == "rank 1:\ntb of 1\n"


def test_a_failed_trial_keeps_its_traceback(monkeypatch, tmp_path):
    real_build = maxbatch.build

    def build(plan, **kwargs):
        if plan.case.batch_size > 8:
            raise IndexError("index out of range in self")
        return real_build(plan, **kwargs)

    monkeypatch.setattr(maxbatch, "build", build)
    cfg = MaxBatchConfig(device="cpu", preset="tiny", modes=("fp32",), start=8, limit=16)
    run_dir = maxbatch.start(cfg, results_dir=tmp_path, command="test")
    render.render(run_dir)
    ok, *bad = results.read_jsonl(run_dir / results.TRIALS)  # 8, then 16, 12, 10, 9
    assert "traceback" not in ok and {t["status"] for t in bad} == {"error"}
    assert len({t["traceback"] for t in bad}) == len(bad)  # a file per trial
    assert "IndexError: index out of range" in (run_dir / bad[0]["traceback"]).read_text()
    assert "`errors/`" in (run_dir / results.REPORT).read_text()


FAST = {
    "census_batch_sizes": [8],
    "conv_batch_sizes": [16],
    "modes": ["fp32", "fp16-amp"],
    "seeds": [0],
    "steps": 10,
    "eval_every": 10,
    "long_steps": 0,
    "checkpoints": [0],
}


def _audit_fails_for(monkeypatch, failing: set[str]) -> None:
    real = audit.audit_mode

    def audit_mode(plan):
        if plan.mode.name in failing:
            raise RuntimeError(f"no audit of {plan.mode.name}\ndetails")
        return real(plan)

    monkeypatch.setattr(audit, "audit_mode", audit_mode)


def _headings(page: str) -> list[int]:
    return [int(n) for n in re.findall(r"^## (\d+)\. ", page, flags=re.MULTILINE)]


@pytest.fixture(scope="module")
def no_audit(tmp_path_factory):
    """A study whose dtype audit failed for every mode."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(audit, "audit_mode", _raise(RuntimeError("the audit broke\nhere")))
        cfg = NumericsConfig.build(device="cpu", options=FAST, workers=None)
        return start_study(cfg, results_dir=tmp_path_factory.mktemp("s"), command="t", tag=None)


def test_a_study_whose_audit_failed_everywhere_writes_no_sentence_about_it(no_audit):
    page = (no_audit / "report.md").read_text()
    for wrong in ("not observed (", "ran in not observed", "() are not observed"):
        assert wrong not in page
    assert "back to `" not in page and " is .\n" not in page
    assert not re.search(r"^\| tensor +\|$", page, flags=re.MULTILINE)  # a table of no mode
    assert _headings(page) == [1, 2, 3, 4, 5]
    assert "Not measured: the audit failed for every mode it ran (fp32, " in page
    assert ": RuntimeError: the audit broke)." in page
    assert "**dtypes.** Not observed: the dtype audit of fp16-amp failed (RuntimeError: " in page
    assert "The claim that" not in page
    assert "| param_dtype " in page  # the error paths ran: they are shown
    found = json.loads((no_audit / "audit.json").read_text())
    assert found["tracebacks"]["fp32"] == "errors/audit_fp32.txt"
    assert "the audit broke" in (no_audit / "errors" / "audit_fp32.txt").read_text()
    assert "The full traceback of each failure is in `errors/`" in page
    assert failures.failures(no_audit).startswith("the dtype audit of fp32, ")


def test_a_section_without_data_keeps_its_heading_and_says_why(no_audit):
    t = tables.load(no_audit)
    failed = {"kind": "census", "mode": "fp16-amp", "batch_size": 8, "seed": 0}
    t["failed"] = pd.DataFrame([{**failed, "status": "oom", "error": "OutOfMemoryError: x"}])
    for name in ("census", "histogram", "fp16_fate", "summary", "steps", "runs", "traces"):
        t[name] = t[name].iloc[:0]
    page = report.render(t)
    assert _headings(page) == [1, 2, 3, 4, 5]
    assert "No rows: every census job failed (OutOfMemoryError: x; see the jobs" in page
    assert "Not measured: the census trajectory that records it failed (OutOfMemoryError" in page
    assert "No rows: the study has no convergence rows, and no convergence job failed." in page


def test_numerics_exits_1_naming_what_failed(monkeypatch, tmp_path, capsys):
    _audit_fails_for(monkeypatch, {"tf32"})
    real = training.convergence

    def convergence(plan, **settings):
        if plan.case.mode == "fp32":
            raise RuntimeError("diverged into a wall")
        return real(plan, **settings)

    monkeypatch.setattr(training, "convergence", convergence)
    argv = ["numerics", "--device", "cpu", "--modes", "fp32,fp16-amp", "--seeds", "0"]
    argv += ["--census-batch-sizes", "8", "--conv-batch-sizes", "16", "--checkpoints", "0"]
    argv += ["--steps", "10", "--long-steps", "0", "--eval-every", "10"]
    assert main([*argv, "--results-dir", str(tmp_path)]) == 1
    (run_dir,) = tmp_path.iterdir()
    assert (run_dir / "report.md").is_file() and "ended" in results.read_env(run_dir)
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("ampbench: numerics: failed: the dtype audit of tf32; convergence ")
    assert "convergence of fp32 b16 s0 (see " in last
    failed = pd.read_csv(run_dir / "failed.csv")
    (path,) = failed["traceback"]
    assert path == "errors/convergence_fp32_b16_s0_10.txt"
    assert "diverged into a wall" in (run_dir / path).read_text()
    assert (run_dir / "errors" / "audit_tf32.txt").is_file()


def test_a_study_that_failed_nowhere_has_no_failures(tmp_path):
    (tmp_path / "audit.json").write_text(json.dumps({"unsupported": {"fp8-rowwise": "no GPU"}}))
    row = {"kind": "convergence", "mode": "fp8-rowwise", "batch_size": 16, "seed": 0}
    pd.DataFrame([{**row, "status": "unsupported", "error": "no GPU"}]).to_csv(
        tmp_path / "failed.csv", index=False
    )
    assert failures.failures(tmp_path) is None


def test_census_failures_of_one_mode_keep_a_traceback_each(monkeypatch, tmp_path):
    # The census compares the modes with their own models (bf16-pure) at each checkpoint.
    real = training._with_weights

    def with_weights(plan, s):
        if plan.mode.name == "bf16-pure":
            raise RuntimeError("no bf16 copy")
        return real(plan, s)

    monkeypatch.setattr(training, "_with_weights", with_weights)
    out = training.census_trajectory(
        resolve(tiny_case(mode="fp16-amp", optimizer="fused")),
        modes_of(training.CENSUS_ALL), noise=2.0, checkpoints=(0, 1), histogram=False,
    )  # fmt: skip
    assert [r["error"] for r in out["failed"]] == [
        "step 0: RuntimeError: no bf16 copy",
        "step 1: RuntimeError: no bf16 copy",
    ]
    from bench.numerics import job as study_job
    from bench.numerics.measure.jobs import Job

    job = Job(kind="census", case=tiny_case(mode="fp16-amp"), steps=0, checkpoints=(0, 1))
    rows = study_job._keep_job_tracebacks(tmp_path, job, out["failed"])
    assert [r["traceback"] for r in rows] == [
        f"errors/{job.key}_bf16-pure.txt",
        f"errors/{job.key}_bf16-pure-2.txt",
    ]


# --debug


def _run(results_dir, *extra):
    argv = ["run", "--device", "cpu", "--modes", "fp32", "--batch-sizes", "4", "--steps", "1"]
    argv += ["--optimizers", "fused", "--warmup", "0", "--no-overhead", *extra]
    argv += ["--results-dir", str(results_dir)]
    return main(argv)


def test_debug_raises_the_first_fault_and_is_on_only_while_the_command_runs(monkeypatch, tmp_path):
    seen = []

    def broken(plan, **kwargs):
        seen.append(debugging())
        raise RuntimeError("look here")

    monkeypatch.setattr(runner, "build", broken)
    monkeypatch.delenv(DEBUG_VAR, raising=False)
    with pytest.raises(RuntimeError, match="look here"):
        _run(tmp_path / "a", "--debug")
    assert seen == [True] and DEBUG_VAR not in os.environ
    assert _run(tmp_path / "b") == 1  # without it the fault is a row, as before
    assert seen == [True, False]


def test_debug_leaves_expected_outcomes_as_rows(monkeypatch):
    with debug(True):
        assert debugging()
        out = fault(torch.cuda.OutOfMemoryError("CUDA out of memory"))
        assert out["status"] == "oom"
        with pytest.raises(ValueError, match="a bug"):
            fault(ValueError("a bug"))
    monkeypatch.setenv(DEBUG_VAR, "0")
    assert not debugging()


@pytest.mark.parametrize(
    ("command", "where"),
    [("maxbatch", (maxbatch, "build")), ("numerics", (audit, "audit_mode"))],
)
def test_debug_raises_in_maxbatch_and_numerics(command, where, monkeypatch, tmp_path):
    monkeypatch.setattr(*where, _raise(RuntimeError("look here")))
    argv = [command, "--device", "cpu", "--modes", "fp32", "--debug"]
    argv += ["--start", "8", "--limit", "8"] if command == "maxbatch" else []
    with pytest.raises(RuntimeError, match="look here"):
        main([*argv, "--results-dir", str(tmp_path)])


def test_debug_goes_with_resume(tmp_path, capsys):
    for command in ("run", "numerics"):
        assert main([command, "--resume", str(tmp_path / "nope"), "--debug"]) == 2
        assert "no such folder" in capsys.readouterr().err
