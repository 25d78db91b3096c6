"""The probe of a user's own loop (bench.ownloop), on the CPU: its folder, its FLOPs, its
marked phases, its count of skipped steps, and what it refuses; a CUDA test forces an fp16
overflow and checks the skipped step is counted."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch
from torch import nn

import bench
from bench.ownloop import contract
from bench.store import results

IN, HIDDEN, OUT, BATCH = 32, 64, 10, 16


@pytest.fixture(autouse=True)
def no_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (contract.MODE, contract.OLD_MODE, contract.SEED, contract.OUT):
        monkeypatch.delenv(name, raising=False)


def mlp() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, OUT))
    return model, torch.optim.AdamW(model.parameters(), 1e-3)


def train(probe, model, optimizer, steps: int, *, mult: float = 1.0, scaler=None) -> None:
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x, y = torch.randn(BATCH, IN, generator=gen), torch.randint(0, OUT, (BATCH,), generator=gen)
        with probe.step():
            loss = nn.functional.cross_entropy(model(x), y)
            if scaler is None:
                loss.backward()
                optimizer.step()
            else:
                scaler.scale(loss * mult).backward()
                scaler.step(optimizer)
                scaler.update()
            optimizer.zero_grad(set_to_none=True)
        probe.log(loss=loss.detach())


def test_the_probe_writes_a_timing_folder_with_counted_flops(tmp_path):
    model, optimizer = mlp()
    probe = bench.probe(model, optimizer, every=4, out=tmp_path / "run")
    train(probe, model, optimizer, 8)
    probe.close()
    (row,) = results.read_rows(tmp_path / "run" / results.ROWS)
    assert row["mode"] == "fp32" and row["model"] == "own:Sequential"
    assert row["status"] == "ok" and row["batch_size"] == BATCH
    # Step 1 counts FLOPs, 2-3 are warm-up, 4 and 8 read memory and take the census, 5 follows
    # the folder's write after 4: 6 and 7 are timed.
    assert row["steps"] == 2 and row["probe_steps"] == 8 and row["optimizer_steps"] == 8
    # Hand-counted: 2·B·(in·hidden + hidden·out) forward; backward 2× for the second Linear, 1×
    # for the first (its input needs no gradient).
    assert row["fwd_gflop"] * 1e9 == 2 * BATCH * (IN * HIDDEN + HIDDEN * OUT)
    assert row["bwd_gflop"] * 1e9 == 2 * BATCH * (IN * HIDDEN + 2 * HIDDEN * OUT)
    assert "no MFU: the CPU" in row["error"] and "no peak memory" in row["error"]
    (samples,) = results.read_rows(tmp_path / "run" / results.SAMPLES)
    assert len(samples["samples_ms"]["total"]) == 2
    for total, fwd, bwd in zip(
        *(samples["samples_ms"][p] for p in ("total", "fwd", "bwd")), strict=True
    ):
        assert 0 < fwd < total and 0 < bwd < total
    census = [json.loads(x) for x in (tmp_path / "run" / "census.jsonl").read_text().splitlines()]
    assert {c["step"] for c in census} == {4, 8} and len(census) == 8  # 4 tensors, twice
    assert all(0 <= c["flushed_share"] <= 1 for c in census)
    metrics = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert len(metrics) == 8 and json.loads(metrics[-1])["name"] == "loss"
    # The loop freed its gradients (zero_grad(set_to_none=True)) before the row was written:
    # they are sized from the parameters, float32 like them.
    params = sum(p.numel() for p in model.parameters()) * 4 / 2**30
    assert row["grad_gib"] == pytest.approx(params) and row["param_gib"] == pytest.approx(params)
    df = bench.load(tmp_path / "run")  # read as any timing folder
    assert list(df["mode"]) == ["fp32"]
    assert df["model_state_gib"].iloc[0] == pytest.approx(
        row["param_gib"] * 2 + row["optim_state_gib"]
    )
    assert results.read_env(tmp_path / "run")["kind"] == "timing"


def test_a_probe_folder_s_report_draws_and_embeds_every_figure(tmp_path, capsys):
    # `ampbench report FOLDER` is how a probe's folder gets its report: the probe, a measuring
    # package, never renders, and the report's code path draws the figures it embeds.
    from bench.cli.main import main
    from bench.publish import plots

    model, optimizer = mlp()
    probe = bench.probe(model, optimizer, every=4, out=tmp_path / "run")
    train(probe, model, optimizer, 8)
    probe.close()
    assert main(["report", str(tmp_path / "run")]) == 0
    text = (tmp_path / "run" / results.REPORT).read_text()
    for file in plots.FILES.values():
        assert (tmp_path / "run" / file).stat().st_size > 0
        assert f"]({file})" in text
    assert (tmp_path / "run" / results.CSV).is_file()


def test_regions_the_user_marks_are_the_phases(tmp_path):
    model, optimizer = mlp()
    probe = bench.probe(model, optimizer, warmup=0, every=100, out=tmp_path / "run", flops=10)
    x, y = torch.randn(BATCH, IN), torch.randint(0, OUT, (BATCH,))
    for _ in range(3):
        with probe.step():
            with probe.phase("forward"):
                loss = nn.functional.cross_entropy(model(x), y)
            with probe.phase("backward"):
                loss.backward()
            with probe.phase("optimizer"):
                optimizer.step()
    probe.close()
    (samples,) = results.read_rows(tmp_path / "run" / results.SAMPLES)
    s = samples["samples_ms"]
    assert len(s["total"]) == 2  # step 1 is never timed
    for i, total in enumerate(s["total"]):
        parts = s["fwd"][i] + s["bwd"][i] + s["step"][i] + s.get("other", [0, 0])[i]
        assert parts == pytest.approx(total)


def test_time_every_times_one_step_in_k_and_still_counts_every_step(tmp_path):
    model, optimizer = mlp()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    probe = bench.probe(
        model, optimizer, scaler=scaler, every=100, warmup=0, time_every=3, out=tmp_path / "run"
    )
    train(probe, model, optimizer, 7, scaler=scaler)
    train(probe, model, optimizer, 1, mult=1e38, scaler=scaler)  # step 8, not timed, overflows
    train(probe, model, optimizer, 2, scaler=scaler)
    probe.close()
    (row,) = results.read_rows(tmp_path / "run" / results.ROWS)
    # Step 1 counts FLOPs; of the rest only 3, 6 and 9 are marked and timed.
    assert row["steps"] == 3 and row["probe_steps"] == 10
    assert row["optimizer_steps"] == 9 and row["skipped_steps"] == 1
    (samples,) = results.read_rows(tmp_path / "run" / results.SAMPLES)
    assert len(samples["samples_ms"]["total"]) == 3
    scale = [json.loads(x) for x in (tmp_path / "run" / "scale.jsonl").read_text().splitlines()]
    assert len(scale) == 10 and [s["step"] for s in scale if s["skipped"]] == [8]
    env = json.loads((tmp_path / "run" / results.ENV).read_text())
    assert env["config"]["time_every"] == 3
    with pytest.raises(ValueError, match="time_every=0"):
        bench.probe(model, optimizer, time_every=0, out=tmp_path / "bad")


def test_a_skipped_step_is_counted(tmp_path):
    # GradScaler on the CPU: a loss multiplied past float32's range makes the gradients inf, the
    # scaler skips the optimizer's step and halves its scale.
    model, optimizer = mlp()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    probe = bench.probe(model, optimizer, scaler=scaler, out=tmp_path / "run", warmup=0)
    train(probe, model, optimizer, 2, scaler=scaler)
    train(probe, model, optimizer, 1, mult=1e38, scaler=scaler)
    probe.close()
    (row,) = results.read_rows(tmp_path / "run" / results.ROWS)
    assert row["skipped_steps"] == 1 and row["optimizer_steps"] == 2
    assert row["grad_scale"] == 2.0**15
    scale = [json.loads(x) for x in (tmp_path / "run" / "scale.jsonl").read_text().splitlines()]
    assert [s["skipped"] for s in scale] == [False, False, True]


@pytest.mark.cuda
def test_an_fp16_overflow_is_a_skipped_step_on_the_gpu(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, OUT)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), 1e-3)
    scaler = torch.amp.GradScaler("cuda", init_scale=256.0)  # well inside float16 at mult 1
    probe = bench.probe(model, optimizer, scaler=scaler, out=tmp_path / "run", warmup=0)
    x, y = torch.randn(BATCH, IN, device="cuda"), torch.randint(0, OUT, (BATCH,), device="cuda")
    for mult in (1.0, 1.0, 1e30, 1.0):  # 1e30 × the scale overflows float16's backward
        with probe.step():
            with torch.autocast("cuda", dtype=torch.float16):
                loss = nn.functional.cross_entropy(model(x), y) * mult
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
    probe.close()
    (row,) = results.read_rows(tmp_path / "run" / results.ROWS)
    assert row["mode"] == "fp16-amp"
    assert row["skipped_steps"] == 1 and row["optimizer_steps"] == 3
    assert row["grad_scale"] == 128.0
    assert row["peak_alloc_gib"] > 0


def test_bad_input_is_one_line_and_keeps_what_was_measured(tmp_path, monkeypatch):
    model, optimizer = mlp()
    with pytest.raises(ValueError, match="Identity has no parameters"):
        bench.probe(nn.Identity(), optimizer, out=tmp_path / "a")
    with pytest.raises(ValueError, match="every=0"):
        bench.probe(model, optimizer, every=0, out=tmp_path / "a")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "rows.jsonl").write_text("")
    with pytest.raises(ValueError, match="already holds files"):
        bench.probe(model, optimizer, out=tmp_path / "full")
    # fp16 with GradScaler asked for, and no scaler given: the first forward says so; the steps
    # before were measured and stay in the folder.
    monkeypatch.setenv(contract.MODE, "fp16-amp")
    probe = bench.probe(model, optimizer, out=tmp_path / "run")
    with pytest.raises(ValueError, match=r"fp16-amp scales the loss.*pass scaler="):
        train(probe, model, optimizer, 1)
    (row,) = results.read_rows(tmp_path / "run" / results.ROWS)
    assert row["status"] == "error" and "scales the loss" in row["error"]


@pytest.mark.parametrize(
    ("autocast", "scaler", "tf32", "params", "mode"),
    [
        (None, False, False, torch.float32, "fp32"),
        (None, False, True, torch.float32, "tf32"),
        (torch.float16, True, False, torch.float32, "fp16-amp"),
        (torch.float16, False, False, torch.float32, "fp16-amp-noscale"),
        (torch.bfloat16, False, False, torch.float32, "bf16-amp"),
        (None, False, False, torch.bfloat16, "bf16-pure"),
        (torch.bfloat16, True, False, torch.float32, "custom"),  # no card scales bf16
    ],
)
def test_a_run_s_settings_name_its_mode(autocast, scaler, tf32, params, mode):
    settings = contract.Settings(
        autocast_dtype=autocast, scaler=scaler, tf32=tf32, param_dtype=params
    )
    assert settings.mode() == mode


def test_the_mode_helpers_apply_the_driver_s_mode(tmp_path, monkeypatch):
    monkeypatch.setenv(contract.MODE, "bf16-amp")
    model, optimizer = mlp()
    probe = bench.probe(model, optimizer, out=tmp_path / "run", flops=1)
    assert not probe.scaler().is_enabled()  # bf16 needs no loss scale
    with probe.step():
        with probe.autocast():
            assert torch.is_autocast_enabled("cpu")
            loss = model(torch.randn(BATCH, IN)).float().sum()
        loss.backward()
        optimizer.step()
    probe.close()
    (row,) = results.read_rows(tmp_path / "run" / results.ROWS)
    assert row["mode"] == "bf16-amp" and row["autocast_dtype"] == "bfloat16"
    monkeypatch.setenv(contract.MODE, "bf16-pure")
    other = bench.probe(model, optimizer, out=tmp_path / "two")
    with pytest.raises(ValueError, match="bf16-pure changes the model"):
        other.autocast()
    other.close()


def test_an_old_own_loop_row_with_freed_gradients_reads_as_not_measured(tmp_path):
    model, optimizer = mlp()
    probe = bench.probe(model, optimizer, every=4, out=tmp_path / "run")
    train(probe, model, optimizer, 4)
    probe.close()
    path = tmp_path / "run" / results.ROWS
    (row,) = results.read_rows(path)
    path.write_text(json.dumps({**row, "grad_gib": 0.0}) + "\n")  # as rows were written before
    df = bench.load(tmp_path / "run")
    assert df["grad_gib"].isna().all() and df["model_state_gib"].isna().all()


def test_the_old_name_of_the_mode_variable_still_asks(monkeypatch):
    monkeypatch.delenv(contract.MODE, raising=False)
    monkeypatch.setenv(contract.OLD_MODE, "bf16-amp")
    assert contract.asked() == "bf16-amp"
    monkeypatch.setenv(contract.MODE, "fp32")  # the new name wins where both are set
    assert contract.asked() == "fp32"


def test_a_bad_mode_in_the_old_variable_is_named_by_that_variable(monkeypatch):
    monkeypatch.delenv(contract.MODE, raising=False)
    monkeypatch.setenv(contract.OLD_MODE, "bogus")
    with pytest.raises(ValueError, match=r"^AMPBENCH_RECIPE='bogus' is not a mode"):
        contract.asked()
    monkeypatch.setenv(contract.MODE, "bogus2")
    with pytest.raises(ValueError, match=r"^AMPBENCH_MODE='bogus2' is not a mode"):
        contract.asked()


@pytest.fixture
def tf32_flags():
    """The process's TF32 switches, put back after the test."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.mark.parametrize(
    ("mode", "script_tf32", "expected"),
    [
        ("fp32", True, False),  # TF32 is what tells fp32 from tf32: those two set it
        ("tf32", False, True),
        ("bf16-amp", True, True),  # an autocast mode keeps the script's own choice
        ("bf16-amp", False, False),
        ("fp16-amp", True, True),
        (None, True, True),  # outside the driver nothing changes
    ],
)
def test_only_a_float32_mode_sets_tf32(
    tmp_path, monkeypatch, tf32_flags, mode, script_tf32, expected
):
    if mode is not None:
        monkeypatch.setenv(contract.MODE, mode)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = script_tf32
    model, optimizer = mlp()
    probe = bench.probe(model, optimizer, out=tmp_path / "run", flops=1)
    assert torch.backends.cuda.matmul.allow_tf32 is expected
    assert torch.backends.cudnn.allow_tf32 is expected
    probe.close()


def test_the_scale_is_copied_after_the_step_s_last_mark(tmp_path):
    # The copy of GradScaler's scale is no part of the timed step (as the harness's watch): in
    # every step the clock's last mark comes before the copy.
    order: list[str] = []

    class Clock:
        def mark(self) -> float:
            order.append("mark")
            return 0.0

        def finish(self) -> None:
            pass

        def elapsed_ms(self, start: float, end: float) -> float:
            return 1.0

    class Scale:
        is_cuda = False

        def detach(self) -> Scale:
            return self

        def clone(self) -> torch.Tensor:
            order.append("copy")
            return torch.tensor(1.0)

    model, optimizer = mlp()
    scaler = torch.amp.GradScaler("cpu")
    scaler._scale = Scale()  # the loop below never calls the scaler: only the probe reads it
    probe = bench.probe(model, optimizer, scaler=scaler, out=tmp_path / "run", warmup=0, flops=1)
    probe.clock = Clock()
    for _ in range(3):
        train(probe, model, optimizer, 1)
        order.append("|")  # the step has ended
    probe.close()
    steps = [s.split(",") for s in ",".join(order).split(",|")[:-1]]
    assert len(steps) == 3
    assert all(s[-1] == "copy" and s[-2] == "mark" and s.count("copy") == 1 for s in steps)


@pytest.mark.parametrize("init_scale", [0.0, math.inf])
def test_a_scale_of_zero_or_inf_makes_every_later_step_skipped_and_the_run_nonfinite(
    tmp_path, init_scale
):
    # A scale of 0 (where a state that overflows every step halves it to) stays 0, and inf stays
    # inf: the unscaled gradients are NaN every step. With a fused optimizer GradScaler still
    # calls its step (the skip is inside), so only the scale's fall could tell, and it falls no
    # more: read as applied before, every such step is skipped, and the run `nonfinite`.
    model, _ = mlp()
    optimizer = torch.optim.AdamW(model.parameters(), 1e-3, fused=True)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    probe = bench.probe(model, optimizer, scaler=scaler, out=tmp_path / "run", warmup=0)
    train(probe, model, optimizer, 4, scaler=scaler)
    probe.close()
    (row,) = results.read_rows(tmp_path / "run" / results.ROWS)
    assert row["status"] == "nonfinite" and "no step after it applies" in row["error"]
    assert row["skipped_steps"] == 4
    text = (tmp_path / "run" / "scale.jsonl").read_text()
    scale = [json.loads(x) for x in text.splitlines()]
    assert all(s["skipped"] for s in scale)
    assert "NaN" not in text and "Infinity" not in text


def test_the_mode_table_says_which_tf32_the_autocast_modes_ran_with():
    from bench.ownloop import render as own_loop

    rows = pd.DataFrame(
        [
            {"mode": "fp32", "status": "ok", "tf32_matmul": False},
            {"mode": "tf32", "status": "ok", "tf32_matmul": True},
            {"mode": "bf16-amp", "status": "ok", "tf32_matmul": True},
            {"mode": "fp16-amp", "status": "ok", "tf32_matmul": True},
            {"mode": "fp16-amp", "status": "ok", "tf32_matmul": False},
            {"mode": "fp16-amp-noscale", "status": "failed", "tf32_matmul": False},
        ]
    )
    (note,) = own_loop.tf32_note(rows)
    assert note.endswith("own setting (bf16-amp on, fp16-amp mixed).")
    assert own_loop.tf32_note(rows.drop(columns="tf32_matmul")) == []


def test_the_hooks_run_eagerly_inside_a_compiled_module(tmp_path):
    # The probe given the module inside torch.compile's wrapper: its hooks then sit inside the
    # compiled call, and dynamo must not trace them (a mark made once, at tracing, would be
    # every step's). The eager backend compiles in a blink; the marks see no tracing.
    model, optimizer = mlp()
    probe = bench.probe(model, optimizer, out=tmp_path / "run", warmup=0, flops=1)
    seen: list[bool] = []
    mark = probe._mark

    def spy(phase: str) -> None:
        seen.append(torch.compiler.is_compiling())
        mark(phase)

    probe._mark = spy
    compiled = torch.compile(model, backend="eager")
    torch._dynamo.reset()
    train(probe, compiled, optimizer, 3)
    probe.close()
    assert seen and not any(seen)
    (row,) = results.read_rows(tmp_path / "run" / results.ROWS)
    assert row["steps"] == 2 and row["fwd_ms"] > 0


@pytest.mark.parametrize(("autocast", "hooked"), [(True, 0), (False, 1)])
def test_a_global_hook_watches_the_first_forward_only_where_autocast_is_off(
    tmp_path, autocast, hooked
):
    # Autocast entered around the call says the mode already; a global hook present while
    # torch.compile traces the forward would be traced with it and cost a recompile.
    seen: list[int] = []

    class Watch(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(len(nn.modules.module._global_forward_pre_hooks))
            return x

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, OUT), Watch())
    optimizer = torch.optim.SGD(model.parameters(), 0.1)
    probe = bench.probe(model, optimizer, out=tmp_path / "run", flops=1)
    for _ in range(2):
        with probe.step():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = model(torch.randn(BATCH, IN)).float().sum()
            loss.backward()
            optimizer.step()
    probe.close()
    assert seen == [hooked, 0]
    (row,) = results.read_rows(tmp_path / "run" / results.ROWS)
    assert row["mode"] == ("bf16-amp" if autocast else "fp32")


def test_a_gpu_s_marks_reuse_their_events_once_read(monkeypatch):
    # A CUDA event is made once and recorded again after its time was read: the probe marks
    # about six a step for the whole run. A stand-in event, so that this runs on the CPU.
    from bench.ownloop import marks

    made: list[object] = []

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing
            self.recorded = 0
            made.append(self)

        def record(self) -> None:
            self.recorded += 1

    monkeypatch.setattr(marks.torch.cuda, "Event", Event)
    clock = marks.EventClock()
    rec = marks.StepRecord(index=1, timed=True, memory=False)
    for phase in ("other", "fwd", None):
        rec.mark(clock, phase)
    rec.copied = clock.mark()
    assert len(made) == 4
    marks.release(clock, rec)
    again = [clock.mark() for _ in range(5)]
    assert len(made) == 5 and sum(e in made[:4] for e in again) == 4
    assert sorted(e.recorded for e in made) == [1, 2, 2, 2, 2]


def test_the_counted_step_runs_eager_and_later_steps_compile():
    """The FLOP-counted step says `force_eager` to dynamo: under the counter's dispatch mode
    torch 2.11 marked a compiled forward's code never to compile again."""
    from torch._dynamo import eval_frame
    from torch._dynamo.utils import counters

    from bench.ownloop.counting import Counter

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    compiled = torch.compile(model, backend="aot_eager")
    x = torch.randn(4, 8)
    counter = Counter()
    counter.start("cpu")
    assert eval_frame._stance.stance == "force_eager"
    compiled(x).sum().backward()
    counter.stop()
    assert eval_frame._stance.stance == "default"
    assert counter.total and counter.total > 0
    before = counters["stats"]["unique_graphs"]
    compiled(x).sum().backward()
    assert counters["stats"]["unique_graphs"] > before
