"""`ampbench sweep -- python train.py`: a user's script under each mode and seed, on the CPU;
its rows, a failed script's row, and the mode table's verdicts (from runs a fake script
writes, where the answer is known)."""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import bench
from bench.cli.main import main
from bench.ownloop import contract
from bench.ownloop import job as sweep
from bench.ownloop import render as own_loop
from bench.ownloop.config import SweepConfig, default_modes
from bench.publish import findings, report
from bench.store import jsonlines, results
from bench.verdicts import sequential, training

ROOT = Path(__file__).resolve().parent.parent
PLAIN = ROOT / "examples" / "own_loop" / "plain_loop.py"


def test_the_driver_runs_the_plain_loop_example(tmp_path, monkeypatch, capsys):
    # One real run of the copy-paste example (fp32), and a mode no script has a switch for: a
    # process of torch costs seconds, so the rounds and verdicts are tested on a fake below.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the script imports this checkout's bench
    code = main(
        ["sweep", "--modes", "fp32,fp8-rowwise", "--seeds", "3", "--results-dir",
         str(tmp_path), "--", sys.executable, str(PLAIN), "--preset", "tiny", "--steps", "6",
         "--batch-size", "2", "--eval-every", "3", "--eval-batches", "1", "--every", "3"]
    )  # fmt: skip
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    df = bench.load(run_dir).set_index("mode")
    assert df.loc["fp32", "status"] == "ok" and df.loc["fp32", "model"] == "own:GPT"
    assert df.loc["fp32", "seed"] == 3 and df.loc["fp8-rowwise", "status"] == "unsupported"
    assert (run_dir / "runs" / "fp32_seed3" / "rows.jsonl").is_file()
    config = results.read_env(run_dir)["config"]  # what the index's line reads
    assert config["model"] == "own:GPT" and config["batch_sizes"] == [2]
    table = (run_dir / own_loop.SWEEP_MD).read_text()
    assert "| fp32" in table and "best val_loss" in table and "no switch for it" in table
    # The timing report, as for any run, saying what its dashes in an own loop's row mean.
    text = (run_dir / results.REPORT).read_text()
    assert text.count("`–` in an own loop's row") == 2 and "preset ." not in text
    assert table in capsys.readouterr().out


def test_the_overhead_benchmark_pairs_its_rounds_and_times_the_probe_on_the_host(
    tmp_path, monkeypatch
):
    folder = ROOT / "examples" / "own_loop"
    monkeypatch.syspath_prepend(str(folder))  # as when run as a script: plain_loop beside it
    spec = importlib.util.spec_from_file_location("overhead", folder / "overhead.py")
    overhead = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(overhead)
    args = ["--preset", "shakespeare-tiny", "--batch-size", "2", "--rounds", "2", "--window", "2"]
    monkeypatch.setattr(
        sys,
        "argv",
        ["overhead.py", *args, "--warmup", "2", "--censuses", "1", "--out", str(tmp_path)],
    )
    overhead.main()
    result = json.loads((tmp_path / "overhead.json").read_text())
    assert len(result["bare_step_ms"]) == len(result["probed_step_ms"]) == 2
    # The probe's own code ran in every probed window, and took less than the whole step.
    host, probed = result["probe_host_us_per_step"], result["probed_step_ms"]
    assert len(host) == 2 and all(0 < us < 1e3 * ms for us, ms in zip(host, probed, strict=True))
    written = (tmp_path / "overhead.md").read_text()
    assert "paired by round" in written and "own host time" in written
    # Written again from the saved numbers: the same page.
    assert overhead.render(result, overhead.BUDGET) == written
    # The probe's own folder is rendered as any timing folder: its report and its figures.
    assert (tmp_path / "probe_run" / "report.md").is_file()
    assert all((tmp_path / "probe_run" / f).is_file() for f in ("throughput.png", "memory.png"))


def test_a_script_that_fails_is_a_row_and_the_run_goes_on(tmp_path):
    script = "import os, sys; print('loading'); print('boom', os.environ['AMPBENCH_MODE']); exit(3)"
    cfg = SweepConfig(
        script=(sys.executable, "-c", script), modes=("fp32", "bf16-amp", "fp8-rowwise"),
        seeds=(0,), device="cpu",
    )  # fmt: skip
    run_dir = sweep.run(cfg, results_dir=tmp_path, command="test")
    rows = {r["mode"]: r for r in results.read_rows(run_dir / results.ROWS)}
    assert rows["fp32"]["status"] == rows["bf16-amp"]["status"] == "failed"
    assert "exited with status 3" in rows["fp32"]["error"]
    assert rows["fp32"]["error"].endswith("loading\nboom fp32")
    assert rows["fp8-rowwise"]["status"] == "unsupported"
    text = own_loop.render(run_dir)
    assert "boom bf16-amp" in text and "0 of 1" in text
    assert own_loop.failed_runs(run_dir) == 2  # the command's exit status is then 1


def fake_script(
    losses: dict,
    step_ms: dict,
    steps: int = 40,
    first: float = 4.0,
    start: int = 0,
    resumed_at: int | None = None,
) -> sweep.Runner:
    """A runner that writes what a probe would: a row, its step times and a val_loss curve from
    `first` at step `start` down to the mode's loss, every 10 steps (a value that is not finite
    written `null`, as the probe writes it); `resumed_at`: the global step a callback recorded
    the run began at (a checkpoint's)."""

    def run(command, environ, log_path, timeout_s):
        mode, seed = environ[contract.MODE], int(environ[contract.SEED])
        out = Path(environ[contract.OUT])
        out.mkdir(parents=True)
        gen = np.random.default_rng(seed * 7 + len(mode))
        times = list(step_ms[mode] * (1 + 0.01 * gen.standard_normal(steps)))
        row = {"case_id": f"own:Fake_{mode}_seed{seed}", "mode": mode, "seed": seed,
               "model": "own:Fake", "status": "ok", "error": "", "skipped_steps": 0,
               "total_ms": float(np.median(times)), "probe_steps": steps}  # fmt: skip
        results.append_jsonl(out / results.ROWS, row)
        results.append_jsonl(
            out / results.SAMPLES, {"case_id": row["case_id"], "samples_ms": {"total": times}}
        )
        # The same spread over the seeds for every mode: bf16's best is fp32's + 0.001.
        last = losses[mode] + 0.01 * (seed - 1) + 0.001 * (mode != "fp32")
        curve = [first, (first + last) / 2, last]
        with (out / "metrics.jsonl").open("w") as f:
            for k, value in enumerate(curve):
                step = start + 10 * k
                f.write(jsonlines.dumps({"step": step, "name": "val_loss", "value": value}) + "\n")
        if resumed_at is not None:
            (out / "env.json").write_text(json.dumps({"start_step": resumed_at}))
        log_path.write_text("done\n")
        return 0, "done\n"

    return run


def test_the_mode_table_judges_speed_and_training_over_seeds(tmp_path):
    losses = {"fp32": 2.0, "bf16-amp": 2.0, "fp16-amp": math.nan}
    step_ms = {"fp32": 10.0, "bf16-amp": 5.0, "fp16-amp": 5.0}
    # Five seeds: the fewest runs a mode the speed verdict takes.
    cfg = SweepConfig(script=("train",), modes=tuple(losses), seeds=tuple(range(5)),
                            device="cpu")  # fmt: skip
    run_dir = sweep.run(cfg, results_dir=tmp_path, command="t", runner=fake_script(losses, step_ms))
    rows = results.read_rows(run_dir / results.ROWS)
    # Interleaved rounds: each round runs every mode, starting one further along.
    assert [r["mode"] for r in rows[:4]] == ["fp32", "bf16-amp", "fp16-amp", "bf16-amp"]
    df, notes = own_loop.table(run_dir, {})
    got = df.set_index("mode")
    assert got.loc["bf16-amp", "speed"] == "faster"
    # Seeds 3 and 4 ran alone too (one at a time on the CPU), but the speed rule timed 3.
    assert list(got["runs alone"]) == [3, 3, 3]
    assert any("from the runs the speed rule timed" in n for n in notes)
    # A speed-up, as the run table printed beside it: fp32's time over bf16's, above 1.
    assert got.loc["bf16-amp", "× fp32"] == pytest.approx(2.0, rel=0.05)
    assert any(n.startswith("`× fp32`: fp32's step time over the mode's") for n in notes)
    assert "time ×" not in own_loop.render(run_dir)
    # The verdict with the numbers it rests on, and the judge's margin in the notes.
    assert got.loc["bf16-amp", "training"].startswith(f"{training.LIKE}: gap ")
    assert "90% interval" in got.loc["bf16-amp", "training"]
    assert any(n.startswith("Margin: ±") for n in notes)
    assert got.loc["fp16-amp", "training"].startswith(f"{training.WORSE}: diverged in 5 of 5")
    assert got.loc["fp32", "training"] == "reference"


def test_fp32_did_not_learn_only_where_its_loss_before_training_shows_it(tmp_path):
    # A Trainer that evaluates first at step 200 (no eval_on_start): the loss had fallen from
    # about 4.2 before then; 2.194 to 1.73 after it is no evidence that fp32 did not learn.
    losses = {"fp32": 1.73, "bf16-amp": 1.73}
    step_ms = {"fp32": 10.0, "bf16-amp": 5.0}
    cfg = SweepConfig(script=("train",), modes=tuple(losses), seeds=(0, 1, 2), device="cpu")
    late = fake_script(losses, step_ms, first=2.194, start=200)
    run_dir = sweep.run(cfg, results_dir=tmp_path / "late", command="t", runner=late)
    cell = own_loop.table(run_dir, {})[0].set_index("mode").loc["bf16-amp", "training"]
    assert cell.startswith(f"{training.NOT_KNOWN}: cannot tell whether fp32's best is 25% below")
    assert "eval_on_start=True" in cell and "step 200" in cell
    # Logged at step 0, before any update, and it did not fall 25%: that shows it.
    flat = fake_script(losses, step_ms, first=2.0, start=0)
    run_dir = sweep.run(cfg, results_dir=tmp_path / "flat", command="t", runner=flat)
    cell = own_loop.table(run_dir, {})[0].set_index("mode").loc["bf16-amp", "training"]
    assert cell.startswith(
        f"{training.NOT_KNOWN}: fp32's best is not 25% below its value before training"
    )
    assert "step 0" in cell and "--expected-drop" in cell


def test_a_fine_tuning_or_resumed_run_is_judged_by_what_it_declares(tmp_path):
    # Fine-tuning: 2.10 before training, 1.70 at its best (-19%), no mode judged at 25%; the
    # script declares 10%, and the runs are judged.
    losses, step_ms = {"fp32": 1.70, "bf16-amp": 1.70}, {"fp32": 10.0, "bf16-amp": 5.0}
    tuned = fake_script(losses, step_ms, first=2.10)
    cfg = SweepConfig(script=("train",), modes=tuple(losses), seeds=(0, 1, 2), device="cpu")
    run_dir = sweep.run(cfg, results_dir=tmp_path / "default", command="t", runner=tuned)
    cell = own_loop.table(run_dir, {})[0].set_index("mode").loc["bf16-amp", "training"]
    assert "not 25% below its value before training" in cell
    declared = dataclasses.replace(cfg, expected_drop=0.1)
    run_dir = sweep.run(declared, results_dir=tmp_path / "declared", command="t", runner=tuned)
    df, notes = own_loop.table(run_dir, results.read_env(run_dir)["config"])
    assert "below its value before training" not in df.set_index("mode").loc["bf16-amp", "training"]
    assert any(n.startswith("Learned: fp32's best 10% below") for n in notes)
    # Resumed from a checkpoint at step 500: its first value is no value before training.
    resumed = fake_script(losses, step_ms, first=1.72, resumed_at=500)
    run_dir = sweep.run(cfg, results_dir=tmp_path / "resumed", command="t", runner=resumed)
    df, notes = own_loop.table(run_dir, {})
    assert "before training" not in df.set_index("mode").loc["bf16-amp", "training"]
    assert any("seed 0, 1, 2 resumed from a checkpoint" in n for n in notes)


def test_the_old_name_runs_sweep_saying_so_in_one_line(tmp_path, capsys):
    # `modes` was the driver's name: it still runs `sweep`, with one line on stderr first.
    assert main(["recipes", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "ampbench: `recipes` is now `sweep`; the old name will go"
    assert "no script" in err[1] and len(err) == 2


def test_a_folder_of_the_old_driver_keeps_its_modes_md(tmp_path):
    # A folder written while the driver was `recipes` holds recipes.md: it is read and
    # rewritten under that name; a new folder's table is sweep.md.
    assert own_loop.written(tmp_path) is None
    (tmp_path / own_loop.OLD_SWEEP_MD).write_text("old")
    assert own_loop.written(tmp_path) == tmp_path / "recipes.md"
    (tmp_path / own_loop.SWEEP_MD).write_text("new")
    assert own_loop.written(tmp_path) == tmp_path / "sweep.md"


def test_bad_input_to_the_driver_is_one_line(tmp_path, capsys):
    assert main(["sweep", "--results-dir", str(tmp_path)]) == 2
    assert "no script" in capsys.readouterr().err
    assert main(["sweep", "--modes", "fp64", "--", "python", "x.py"]) == 2
    assert "fp64" in capsys.readouterr().err
    assert main(["sweep", "--min-effect", "1.5", "--", "python", "x.py"]) == 2
    assert "'1.5' is not a number between 0 and 1" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_script_runs_where_the_user_ran_the_command(tmp_path, monkeypatch):
    # run_bench.sh changes into the project and says where the user was in AMPBENCH_CWD.
    (tmp_path / "train.py").write_text("import os; print('here', os.getcwd())\n")
    environ = {**os.environ, "AMPBENCH_CWD": str(tmp_path)}
    code, output = sweep.run_script(
        [sys.executable, "train.py"], environ, tmp_path / "log.txt", timeout_s=60
    )
    assert code == 0 and f"here {tmp_path}" in output


USER_SCRIPT = """\
import bench, torch
print("bench from", bench.__file__)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
probe = bench.probe(model, optimizer, every=4, warmup=1, census=False)
for step in range(6):
    with probe.step():
        loss = model(torch.ones(2, 4)).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    probe.log(loss=loss.detach())
probe.close()
"""


def test_run_bench_runs_a_script_in_the_user_s_own_folder(tmp_path):
    # A project of the user's, outside this checkout, with its own `train.py`, run as
    # docs/own-loop.md shows: path/to/ampbench/run_bench.sh sweep -- python train.py. The
    # user's PYTHONPATH holds a `bench` of another copy that fails on import: the script must
    # import this checkout's (the copy whose driver reads its folder back).
    project, other = tmp_path / "project", tmp_path / "other" / "bench"
    project.mkdir()
    other.mkdir(parents=True)
    (project / "train.py").write_text(USER_SCRIPT)
    (other / "__init__.py").write_text("raise ImportError('the other copy')\n")
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(other.parent)}
    env.pop("AMPBENCH_CWD", None)
    proc = subprocess.run(
        [str(ROOT / "run_bench.sh"), "sweep", "--modes", "fp32", "--seeds", "0", "--device",
         "cpu", "--results-dir", "runs_here", "--", sys.executable, "train.py"],
        cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # --results-dir is the user's path too: under their project.
    (run_dir,) = (project / "runs_here").iterdir()
    (row,) = results.read_rows(run_dir / results.ROWS)
    assert row["status"] == "ok" and row["model"] == "own:Linear"
    # The run table it prints and sweep.md name their ratio alike.
    assert "`× fp32`: fp32's step time" in proc.stderr and "× fp32" in proc.stdout
    log = (run_dir / "runs" / "fp32_seed0.log").read_text()
    assert f"bench from {ROOT / 'bench' / '__init__.py'}" in log


def test_the_driver_s_folder_wins_over_the_script_s_own(tmp_path, monkeypatch):
    model = torch.nn.Linear(4, 2)
    monkeypatch.setenv(contract.OUT, str(tmp_path / "driver"))
    probe = bench.probe(model, torch.optim.SGD(model.parameters(), 0.1), out=tmp_path / "mine")
    probe.close()
    assert Path(probe.folder) == tmp_path / "driver" and not (tmp_path / "mine").exists()


def test_a_run_of_seeds_names_each_row_s_seed_and_a_missing_seed(tmp_path):
    losses = {"fp32": 2.0, "bf16-amp": 2.0}
    step_ms = {"fp32": 10.0, "bf16-amp": 10.0}
    script = fake_script(losses, step_ms)

    def runner(command, environ, log_path, timeout_s):
        if environ[contract.MODE] == "bf16-amp" and environ[contract.SEED] == "1":
            log_path.write_text("Traceback\nValueError: boom\n")
            return 1, "Traceback\nValueError: boom\n"
        return script(command, environ, log_path, timeout_s)

    cfg = SweepConfig(script=("train",), modes=tuple(losses), seeds=(0, 1, 2), device="cpu")
    run_dir = sweep.run(cfg, results_dir=tmp_path, command="t", runner=runner)
    _, notes = own_loop.table(run_dir, {})
    assert "bf16-amp's best value is the mean of seed 0, 2, fp32's of seed 0, 1, 2" in " ".join(
        notes
    )
    # The run report's headline table and findings tell the seeds' rows apart.
    df = bench.load(run_dir).assign(batch_size=8, optimizer="foreach", variant="eager")
    assert "|   seed |" in report.headline(df)
    # Its `× fp32` reads as sweep.md's does, and says so.
    assert "`× fp32`: fp32's step time (at the row's seed) over the row's; above 1 is faster." in (
        report.headline(df)
    )
    assert re.search(r"\(seed \d, eager", " ".join(findings.findings(df, "foreach")))
    assert sweep._one_line(
        {"error": "the script exited with status 1; its last lines:\nTraceback\nValueError: boom",
         "run": "runs/bf16-amp_seed1"}
    ) == (
        "the script exited with status 1; its last lines … ValueError: boom "
        "(the whole log: runs/bf16-amp_seed1.log)"
    )  # fmt: skip


def test_seeds_past_the_timed_ones_run_packed_and_only_runs_alone_give_speed(tmp_path):
    losses = {"fp32": 2.0, "bf16-amp": 2.0}
    step_ms = {"fp32": 10.0, "bf16-amp": 5.0}
    fake = fake_script(losses, step_ms)

    def slow(command, environ, log_path, timeout_s):
        time.sleep(0.3)  # long enough that two runs side by side overlap
        return fake(command, environ, log_path, timeout_s)

    cfg = SweepConfig(script=("train",), modes=tuple(losses), seeds=(0, 1, 2, 3),
                            device="cpu", workers=2, timed_seeds=1)  # fmt: skip
    run_dir = sweep.run(cfg, results_dir=tmp_path, command="t", runner=slow)
    rows = results.read_rows(run_dir / results.ROWS)
    alone = [r for r in rows if r["ran"] == "alone"]
    packed = [r for r in rows if r["ran"] == "packed"]
    assert sorted((r["mode"], r["seed"]) for r in alone) == [("bf16-amp", 0), ("fp32", 0)]
    assert len(packed) == 6 and {r["side_by_side"] for r in packed} == {2}
    # The runs alone did not overlap; some packed ones did.
    spans = sorted((r["started_at_s"], r["ended_at_s"]) for r in packed)
    assert any(b[0] < a[1] for a, b in itertools.pairwise(spans))
    a0, a1 = sorted((r["started_at_s"], r["ended_at_s"]) for r in alone)
    assert a0[1] <= a1[0]
    # The speed verdict reads only the runs alone: one a side, too few for a verdict.
    df, notes = own_loop.table(run_dir, {})
    got = df.set_index("mode")
    assert list(got["runs alone"]) == [1, 1]
    assert "1 runs of bf16-amp and 1 of fp32" in got.loc["bf16-amp", "speed from"]
    assert any("from the runs timed alone" in n and "2 side by side" in n for n in notes)
    # The training verdict reads every seed, the packed ones too.
    assert got.loc["bf16-amp", "training"].startswith(f"{training.LIKE}: gap ")


def test_the_driver_packs_by_the_largest_peak_on_a_gpu(tmp_path, monkeypatch):
    from bench.lifecycle import packing

    monkeypatch.setattr(packing.os, "sched_getaffinity", lambda _: set(range(16)))
    monkeypatch.setattr(packing, "free_gib", lambda: 139.0)
    folder = tmp_path / "f"
    folder.mkdir()
    for peak in (3.5, 4.4):
        row = {"case_id": str(peak), "status": "ok", "peak_alloc_gib": peak}
        results.append_jsonl(folder / results.ROWS, row)
    cfg = SweepConfig(script=("t",), modes=("fp32",), device="cuda")
    holder = type("F", (), {"path": folder})()
    workers, why = sweep.workers_for(holder, cfg, 40)
    # 80% of 139 GiB at 4.4 + 1 GiB a run: 20 fit, more than the 16 cores.
    assert workers == 16 and "20 fit" in why
    assert sweep.workers_for(holder, cfg, 5)[0] == 5
    assert sweep.workers_for(holder, dataclasses.replace(cfg, workers=2), 40)[0] == 2


def injected_looks(monkeypatch, decide_at: dict[str, int]) -> list[list[int]]:
    """Each mode decided from the look at `decide_at[mode]` seeds, across the margin before
    (as tests/test_quality_looks.py injects them); returns the looks the driver asked about."""
    asked = []

    def verdict(word):
        return training.Verdict(word, "injected", 0.0, -0.01, 0.01, 0.01, needed=7)

    def judge_looks(run_dir, cfg, taken):
        asked.append(list(taken))
        n = taken[-1]
        word = {m: training.LIKE if n >= at else training.NOT_KNOWN for m, at in decide_at.items()}
        return {m: sequential.Judged(verdict(w), n, 0.05, len(taken)) for m, w in word.items()}

    monkeypatch.setattr(sweep, "judge_looks", judge_looks)
    return asked


def test_a_look_adds_seeds_only_to_fp32_and_the_undecided_modes(tmp_path, monkeypatch):
    modes = ("fp32", "bf16-amp", "fp16-amp")
    asked = injected_looks(monkeypatch, {"bf16-amp": 3, "fp16-amp": 5})
    runner = fake_script(dict.fromkeys(modes, 2.0), dict.fromkeys(modes, 5.0))
    cfg = SweepConfig(script=("train",), modes=modes, seeds=(0, 1, 2), device="cpu",
                            workers=2, max_seeds=6)  # fmt: skip
    run_dir = sweep.run(cfg, results_dir=tmp_path, command="t", runner=runner)
    rows = results.read_rows(run_dir / results.ROWS)
    seeds = {m: sorted(r["seed"] for r in rows if r["mode"] == m) for m in modes}
    assert seeds == {"fp32": [0, 1, 2, 3, 4], "bf16-amp": [0, 1, 2], "fp16-amp": [0, 1, 2, 3, 4]}
    assert asked == [[3], [3, 4], [3, 4, 5]]
    assert all(r["ran"] == "packed" for r in rows if r["seed"] >= 3)
    info = results.read_env(run_dir)
    assert info["looks"] == [3, 4, 5] and info["looks_ended"] == "every mode decided"


def test_a_budget_stops_the_looks_before_one_that_would_end_past_it(tmp_path, monkeypatch):
    modes = ("fp32", "bf16-amp")
    injected_looks(monkeypatch, {"bf16-amp": 99})
    now = iter([0.0, 1000.0, 1000.0])
    monkeypatch.setattr(sweep, "clock", lambda: next(now))
    runner = fake_script(dict.fromkeys(modes, 2.0), dict.fromkeys(modes, 5.0))
    cfg = SweepConfig(script=("train",), modes=modes, seeds=(0, 1, 2), device="cpu",
                            max_seeds=8, budget_s=900.0)  # fmt: skip
    run_dir = sweep.run(cfg, results_dir=tmp_path, command="t", runner=runner)
    rows = results.read_rows(run_dir / results.ROWS)
    assert sorted({r["seed"] for r in rows}) == [0, 1, 2]  # no look past the first
    info = results.read_env(run_dir)
    assert info["looks"] == [3] and info["looks_ended"] == "the budget"
    assert info["undecided"] == ["bf16-amp"]


def test_the_mode_table_judges_over_the_looks_and_names_the_seeds_needed(tmp_path):
    modes = ("fp32", "bf16-amp")
    runner = fake_script(dict.fromkeys(modes, 2.0), dict.fromkeys(modes, 5.0))
    cfg = SweepConfig(script=("train",), modes=modes, seeds=(0, 1, 2), device="cpu",
                            max_seeds=4)  # fmt: skip
    run_dir = sweep.run(cfg, results_dir=tmp_path, command="t", runner=runner)
    info = results.read_env(run_dir)
    assert info["looks"][0] == 3 and info["design"]["max_seeds"] == 4
    text = own_loop.render(run_dir)
    assert "Seeds in looks at 3" in text and "ended by" in text


SLEEPY = """# A tiny script timed by the sweep, torch-free so that a process starts in a blink: each
# of its steps sleeps FP32_MS under fp32 and OTHER_MS under any other mode, timed by the host
# clock, and it writes what the probe writes (its row and its step times).
import json, os, sys, time
from pathlib import Path

mode, seed = os.environ["AMPBENCH_MODE"], int(os.environ["AMPBENCH_SEED"])
out = Path(os.environ["AMPBENCH_OUT"])
ms = float(sys.argv[1] if mode == "fp32" else sys.argv[2])
times = []
for _ in range(30):
    start = time.perf_counter()
    time.sleep(ms / 1e3)
    times.append((time.perf_counter() - start) * 1e3)
out.mkdir(parents=True)
case = f"own:Sleepy_{mode}_seed{seed}"
row = {"case_id": case, "mode": mode, "seed": seed, "model": "own:Sleepy", "status": "ok",
       "error": "", "skipped_steps": 0, "total_ms": sorted(times)[15], "probe_steps": 30}
(out / "rows.jsonl").write_text(json.dumps(row) + "\\n")
samples = {"case_id": case, "samples_ms": {"total": times}}
(out / "samples.jsonl").write_text(json.dumps(samples) + "\\n")
(out / "metrics.jsonl").write_text(json.dumps({"step": 0, "name": "loss", "value": 1.0}) + "\\n")
"""


@pytest.mark.parametrize(("fp32_ms", "other_ms", "allowed"), [
    (8.0, 4.0, {"faster"}), (4.0, 4.0, {"same", "unclear"}),
])  # fmt: skip
def test_a_cpu_sweep_of_a_sleeping_script_at_the_default_seeds(
    tmp_path, fp32_ms, other_ms, allowed
):
    # fp32's step sleeps twice as long as bf16-amp's: `faster` from the default seeds' first
    # look; equal sleeps: never faster or slower (a run's median moves far less than 2%).
    script = tmp_path / "sleepy.py"
    script.write_text(SLEEPY)
    modes = default_modes("cpu")
    assert modes == ("fp32", "bf16-amp")
    cfg = SweepConfig(script=(sys.executable, str(script), str(fp32_ms), str(other_ms)),
                            modes=modes, device="cpu")  # fmt: skip
    run_dir = sweep.run(cfg, results_dir=tmp_path / "out", command="t")
    got = own_loop.table(run_dir, {})[0].set_index("mode")
    assert list(got["runs alone"]) == [3, 3]
    assert got.loc["bf16-amp", "speed"] in allowed, got.loc["bf16-amp", "speed from"]
    if "faster" in allowed:
        assert got.loc["bf16-amp", "speed from"].startswith("3 and 3 runs timed alone")


def test_a_look_times_undecided_speeds_alone_and_jumps_as_far_as_the_machine_holds(
    tmp_path, monkeypatch
):
    # Training: bf16-amp decided at the first look, fp16-amp projected to need 7 seeds (the
    # injected verdicts' `needed`). Speed: bf16-amp undecided at the first look only.
    modes = ("fp32", "bf16-amp", "fp16-amp")
    asked = injected_looks(monkeypatch, {"bf16-amp": 3, "fp16-amp": 6})
    speed_asked = []

    def judge_speed(run_dir, cfg):
        speed_asked.append(run_dir)
        return ["bf16-amp"] if len(speed_asked) == 1 else []

    monkeypatch.setattr(sweep, "judge_speed", judge_speed)
    runner = fake_script(dict.fromkeys(modes, 2.0), dict.fromkeys(modes, 5.0))
    cfg = SweepConfig(script=("train",), modes=modes, seeds=(0, 1, 2), device="cpu",
                            workers=8, max_seeds=6)  # fmt: skip
    run_dir = sweep.run(cfg, results_dir=tmp_path, command="t", runner=runner)
    # One look, from 3 seeds straight to the cap of 6: its 5 packed runs fit at once.
    assert asked == [[3], [3, 6]]
    rows = results.read_rows(run_dir / results.ROWS)
    timed = {(r["mode"], r["seed"]): r["timed_look"] for r in rows if r["timed_look"]}
    assert timed == {**{(m, s): 1 for m in modes for s in (0, 1, 2)},
                     ("fp32", 3): 2, ("bf16-amp", 3): 2}  # fmt: skip
    # The look's timed runs in the order its turn gives (round 1: turned once).
    look = [r["mode"] for r in rows if r["timed_look"] == 2]
    assert look == ["bf16-amp", "fp32"]
    packed = sorted((r["mode"], r["seed"]) for r in rows if r["ran"] == "packed")
    assert packed == [("fp16-amp", 3), ("fp16-amp", 4), ("fp16-amp", 5), ("fp32", 4), ("fp32", 5)]
    info = results.read_env(run_dir)
    assert info["timed_looks"] == 2 and info["speed_plan"] == {"first": 3, "most": 6,
                                                               "confidence": 0.95}  # fmt: skip
    assert info["looks_ended"] == "every mode decided"


def test_a_mode_decided_early_is_not_said_to_have_failed(tmp_path, monkeypatch):
    modes = ("fp32", "bf16-amp", "fp16-amp")
    injected_looks(monkeypatch, {"bf16-amp": 3, "fp16-amp": 4})
    runner = fake_script(dict.fromkeys(modes, 2.0), dict.fromkeys(modes, 5.0))
    cfg = SweepConfig(script=("train",), modes=modes, seeds=(0, 1, 2), device="cpu",
                            max_seeds=4)  # fmt: skip
    run_dir = sweep.run(cfg, results_dir=tmp_path, command="t", runner=runner)
    text = " ".join(own_loop.table(run_dir, {})[1])
    assert "bf16-amp's best value is the mean of seed 0, 1, 2" in text
    assert "did not finish" not in text and "stopped adding its seeds once it was decided" in text


def test_the_declared_minimum_effect_decides_what_same_means(tmp_path):
    # bf16-amp takes half fp32's time: `faster` at the default 2%; declared 60%, a time ratio of
    # 0.5 lies within 1 ± 0.6, and so does its interval: `same`.
    modes = ("fp32", "bf16-amp")
    runner = fake_script(dict.fromkeys(modes, 2.0), {"fp32": 10.0, "bf16-amp": 5.0})
    words = []
    for k, effect in enumerate((0.02, 0.6)):
        cfg = SweepConfig(script=("train",), modes=modes, device="cpu", min_effect=effect)
        run_dir = sweep.run(cfg, results_dir=tmp_path / str(k), command="t", runner=runner)
        words.append(own_loop.table(run_dir, {})[0].set_index("mode").loc["bf16-amp", "speed"])
    assert words == ["faster", "same"]
