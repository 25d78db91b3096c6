"""The largest-batch search: doubling then bisection, against a fake allocator that fails above a
known size, and a limit that is not memory."""

import pandas as pd
import pytest
import torch

from bench.cli import main
from bench.jobs import maxbatch
from bench.jobs.maxbatch import MaxBatchConfig, search
from bench.plan.plan import resolve
from bench.publish import render
from bench.publish.maxbatch import summarize_trials
from bench.store import results


def _fake(limit: int, status: str = "oom"):
    seen = []

    def run(batch: int) -> dict:
        seen.append(batch)
        ok = batch <= limit
        return {"batch_size": batch, "status": "ok" if ok else status}

    return run, seen


def test_doubling_then_bisection_brackets_the_limit():
    run, seen = _fake(1000)
    rows = search(run, start=64, limit=2**20, resolution=1 / 16)
    assert seen[:6] == [64, 128, 256, 512, 1024, 768]
    good = max(r["batch_size"] for r in rows if r["status"] == "ok")
    bad = min(r["batch_size"] for r in rows if r["status"] != "ok")
    assert good <= 1000 < bad and bad - good <= good / 16


def test_a_size_that_never_fails_stops_at_the_limit():
    run, seen = _fake(10**9)
    search(run, start=100, limit=1000, resolution=1 / 16)
    assert seen == [100, 200, 400, 800, 1000]


def test_a_failing_first_size_is_one_row():
    run, seen = _fake(10)
    assert len(search(run, start=64, limit=1024, resolution=0.1)) == 1 and seen == [64]


def test_what_stopped_the_search_is_named():
    trials = [
        {
            "mode": "fp32",
            "variant": "eager",
            "batch_size": b,
            "status": s,
            "error": e,
            "samples_per_s": 1.0,
            "leftover_gib": 0.0,
        }
        for b, s, e in [(64, "ok", ""), (128, "error", "RuntimeError: index out of range")]
    ]
    table = summarize_trials(pd.DataFrame(trials), limit=4096)
    assert table.loc[0, "largest_batch"] == 64
    assert table.loc[0, "limited_by"] == "error at batch 128: RuntimeError: index out of range"


def test_end_to_end_against_a_fake_allocator(monkeypatch, tmp_path):
    real_build = maxbatch.build

    def build(plan, **kwargs):
        if plan.case.batch_size > 40:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_build(plan, **kwargs)

    monkeypatch.setattr(maxbatch, "build", build)
    cfg = MaxBatchConfig(
        device="cpu", preset="tiny", modes=("fp32", "bf16-amp"), start=8, limit=256
    )
    run_dir = maxbatch.start(cfg, results_dir=tmp_path, command="test")
    render.render(run_dir)  # as the command does after the job
    table = pd.read_csv(run_dir / results.CSV)
    # 8, 16, 32 train; 64 fails; bisection: 48 fails, 40 trains, 44 and 42 fail.
    assert list(table["largest_batch"]) == [40, 40]
    assert list(table["first_failing_batch"]) == [42, 42]
    assert all(s.startswith("memory: out of memory at batch") for s in table["limited_by"])
    trials = results.read_jsonl(run_dir / results.TRIALS)
    assert {t["status"] for t in trials} == {"ok", "oom"}
    assert "Largest batch per mode" in (run_dir / results.REPORT).read_text()


def test_a_gpt_trial_trains_its_model_and_counts_tokens():
    cfg = MaxBatchConfig(
        device="cpu", preset="tiny", model="gpt", modes=("fp32",), start=2, limit=2
    )
    case = maxbatch.trial_case(cfg, "fp32", "eager", 2)
    assert (case.model, case.preset) == ("gpt", "tiny")
    row = maxbatch.trial(resolve(case))
    assert row["status"] == "ok", row["error"]
    assert row["model"] == "gpt" and row["tokens_per_s"] == row["samples_per_s"] * 32


def test_bad_settings_name_the_value():
    with pytest.raises(ValueError, match=r"resolution 0\.0 is not"):
        MaxBatchConfig(device="cpu", preset="tiny", resolution=0.0)


@pytest.mark.cuda
def test_a_failed_trial_leaves_no_memory_behind(monkeypatch):
    def hog_then_fail(s):
        hog = torch.empty(2**28, device="cuda")  # 1 GiB that only this frame holds
        raise torch.cuda.OutOfMemoryError(f"CUDA out of memory (test, {hog.numel()})")

    monkeypatch.setattr(maxbatch, "prepare", hog_then_fail)
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated() / 2**30
    cfg = MaxBatchConfig(device="cuda", preset="tiny", modes=("fp32",), start=8, limit=8)
    row = maxbatch.trial(resolve(maxbatch.trial_case(cfg, "fp32", "eager", 8)))
    assert row["status"] == "oom"
    assert row["leftover_gib"] <= before + 0.01


@pytest.mark.parametrize(
    ("mode", "variant"), [("fp8-rowwise", "eager"), ("fp32", "cudagraph")], ids=["mode", "variant"]
)
def test_an_unsupported_mode_or_variant_renders_with_its_reason(tmp_path, mode, variant):
    # Its rows ran nothing, so they lack the columns of a trial that ran (leftover_gib).
    cfg = MaxBatchConfig(
        device="cpu", preset="tiny", modes=(mode,), variants=(variant,), start=8, limit=16
    )
    run_dir = maxbatch.start(cfg, results_dir=tmp_path, command="test")
    render.render(run_dir)  # as the command does after the job
    table = pd.read_csv(run_dir / results.CSV)
    assert table.loc[0, "limited_by"].startswith("unsupported: ")
    assert pd.isna(table.loc[0, "largest_batch"])
    assert "unsupported" in (run_dir / results.REPORT).read_text()
    assert render.render(run_dir) == run_dir / results.REPORT  # `report` on the folder


def test_an_unsupported_mode_beside_one_that_trains():
    trials = [
        {"mode": "fp32", "variant": "eager", "batch_size": 8, "status": "ok", "error": "",
         "samples_per_s": 1.0, "leftover_gib": 0.0},
        {"mode": "fp8-rowwise", "variant": "eager", "batch_size": 8, "status": "unsupported",
         "error": "float8 needs CUDA"},
    ]  # fmt: skip
    table = summarize_trials(pd.DataFrame(trials), limit=16)
    assert list(table["largest_batch"].isna()) == [False, True]
    assert table.loc[1, "limited_by"] == "unsupported: float8 needs CUDA"


def test_an_interrupted_search_says_so_and_claims_no_limit(monkeypatch, tmp_path, capsys):
    real_build = maxbatch.build

    def build(plan, **kwargs):
        if plan.case.batch_size > 16:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the search
        return real_build(plan, **kwargs)

    monkeypatch.setattr(maxbatch, "build", build)
    argv = ["maxbatch", "--device", "cpu", "--preset", "tiny", "--modes", "fp32"]
    assert main([*argv, "--start", "8", "--limit", "256", "--results-dir", str(tmp_path)]) == 130
    (run_dir,) = tmp_path.iterdir()
    assert "the trials that finished are kept in" in capsys.readouterr().err
    report = (run_dir / results.REPORT).read_text()  # rendered although the search was cut
    assert "This search stopped before it ended" in report
    assert "not known: the search stopped at batch 16, short of its limit (256)" in report
    assert "every size tried trained" not in report
