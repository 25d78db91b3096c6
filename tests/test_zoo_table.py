"""README's "which mode for which model" table (`ampbench:zoo`), from run folders written here
and study tables made here."""

from __future__ import annotations

from bench.publish import readme, zoo
from bench.quality.config import QualityConfig
from bench.store import results
from bench.verdicts import training
from bench.verdicts.training import Verdict
from tests.stored import timing_row, write_run


def _rows(model: str, fp8: bool) -> list[dict]:
    out = []
    for mode, ms in (("fp32", 10.0), ("tf32", 5.0), ("bf16-amp", 2.5)):
        out.append(timing_row(mode=mode, optimizer="fused", model=model, total_ms=ms))
    for mode, ms, plan in (
        ("fp8-tensorwise", 2.0, "fc1 converted; fc2 kept: the output head"),
        ("fp8-rowwise", 2.4, "fc1 kept: too small for rowwise; fc2 kept: the output head"),
    ):
        row = timing_row(mode=mode, optimizer="fused", model=model, total_ms=ms)
        if fp8:
            row["fp8_linears"] = plan
        else:
            row.update(
                status="unsupported", error=f"{mode}: float8 converts no Linear of {model}: fc1"
            )
        out.append(row)
    for row in out:
        row["peak_alloc_gib"] = row["total_ms"] / 10
        row["rounds"] = 3  # the rounds engine's rows: a float8 ratio may be decided
    return out


def _study(
    model: str, scaler: str, unlike: tuple[str, ...] = (), batch: int = 8, preset: str = ""
) -> dict:
    """A time-to-quality study of `model` as `bench.quality.render.report.study` gives it: every
    mode but `unlike` trains like fp32, and the GradScaler verdict is `scaler`."""
    modes = ("fp32", "tf32", "bf16-amp", "fp8-tensorwise", "fp16-amp", "fp16-amp-noscale")
    verdicts = {
        m: Verdict(training.WORSE if m in unlike else training.LIKE, "a fixture") for m in modes
    }
    cfg = QualityConfig(device="cuda", model=model, preset=preset, batch_size=batch,
                        steps=10, eval_every=5)  # fmt: skip
    return {"cfg": cfg, "verdicts": verdicts, "scaler": Verdict(scaler, "a fixture")}


def test_each_model_gets_its_mode_float8_and_scaler_verdict(tmp_path, monkeypatch):
    a = write_run(tmp_path / "a", _rows("timm:resnet18", fp8=True), gpu="NVIDIA H200")
    b = write_run(tmp_path / "b", _rows("tests.own:cnn", fp8=False), gpu="NVIDIA H200")
    # Which modes trained like fp32 is the study's verdict; here fp8-tensorwise did not.
    studies = [
        _study("timm:resnet18", training.NEEDED, unlike=("fp8-tensorwise",)),
        _study("other:model", training.NOT_NEEDED),
    ]
    models = [(results.load(f), zoo.studies_of(results.load(f), studies)) for f in (a, b)]
    assert [len(s) for _, s in models] == [1, 0]
    text = "\n".join(zoo.table(models, "fused"))
    lines = [ln for ln in text.splitlines() if ln.startswith("| `")]
    first, second = ([c.strip() for c in ln.strip("|").split("|")] for ln in lines)
    assert first[2] == "fp8-tensorwise (eager, 2.00 ms)"
    # fp8-rowwise (2.4 ms) converted no Linear: bf16-amp's step under its name, `unsupported`,
    # where the old table named it the fastest that trains like fp32.
    assert first[3] == "bf16-amp (eager, 2.50 ms)"
    assert first[4:7] == ["4.00", "2.00", "0.250"]  # fp32 10 and tf32 5 over 2.5 ms; its peak
    assert first[7] == "pays: fp8-tensorwise 1.25× bf16-amp"
    assert first[8] == "needed"
    assert second[2] == "bf16-amp (eager, 2.50 ms)" and second[3] == "not known"
    assert second[7] == "unsupported: converts no Linear" and second[8] == "not known"
    assert (
        "no time-to-quality study on real data of this model at this preset and batch size" in text
    )


def test_a_study_at_another_batch_size_decides_nothing(tmp_path):
    run = results.load(write_run(tmp_path / "a", _rows("hf:gpt2", fp8=True), gpu="NVIDIA H200"))
    (row,) = _cells("\n".join(zoo.table([(run, [_study("hf:gpt2", training.NEEDED, batch=2)])],
                                         "fused")))  # fmt: skip
    assert row[3] == "not known" and row[8] == "not known"


def test_a_study_of_another_size_decides_nothing(tmp_path):
    rows = _rows("hf:llama", fp8=True)
    for row in rows:
        row["preset"] = "1b"
    run = results.load(write_run(tmp_path / "a", rows, gpu="NVIDIA H200"))
    small = _study("hf:llama", training.NEEDED, preset="small")  # at the rows' batch, 8
    assert zoo.studies_of(run, [_study("hf:llama", training.NEEDED, preset="1b")]) != []
    assert zoo.studies_of(run, [small]) == []
    (row,) = _cells("\n".join(zoo.table([(run, zoo.studies_of(run, [small]))], "fused")))
    assert row[3] == "not known" and row[8] == "not known"


def test_fp32_alone_like_itself_is_not_a_recommendation(tmp_path):
    # Every other mode's interval crossed the margin: the old cell named fp32 "the fastest
    # that trains like fp32", a recommendation the study cannot make.
    run = results.load(write_run(tmp_path / "a", _rows("hf:gpt2", fp8=True), gpu="NVIDIA H200"))
    study = _study("hf:gpt2", training.NEEDED, batch=8)
    study["verdicts"] = {m: Verdict(training.LIKE if m == "fp32" else training.NOT_KNOWN, "x")
                         for m in study["verdicts"]}  # fmt: skip
    text = "\n".join(zoo.table([(run, [study])], "fused"))
    (row,) = _cells(text)
    assert row[3] == "not known" and row[4] == "5.00"  # × fp32 of the fastest (2 ms), not 1
    assert "`hf:gpt2`: its study shows no mode but fp32 to train like fp32" in text
    assert "no time-to-quality study" not in text


def test_the_readme_block_links_every_run(tmp_path):
    write_run(tmp_path / "results" / "a", _rows("hf:gpt2", fp8=True), gpu="NVIDIA H200")
    write_run(tmp_path / "results" / "b", _rows("hf:bert", fp8=True), gpu="NVIDIA H200")
    block = readme.Block("zoo", "results/a", {"with": "b"}, "", 1)
    text = readme.generate(block, root=tmp_path)
    # by model, and the commit the data comes from
    assert (
        "From [`hf:gpt2`](results/a) and [`hf:bert`](results/b) (recorded at an unknown commit):"
        in text
    )


def test_a_run_that_stopped_early_says_so_under_the_table(tmp_path):
    a = write_run(tmp_path / "a", _rows("hf:bert", fp8=True), gpu="NVIDIA H200")
    b = write_run(tmp_path / "b", _rows("hf:gpt2", fp8=True), gpu="NVIDIA H200")
    models = [(results.load(f), []) for f in (a, b)]
    text = "\n".join(zoo.table(models, "fused", expected=[18, 5]))
    assert "`hf:bert`: its run stopped early, with 5 of its 18 cases measured" in text
    assert "`hf:gpt2`:" not in text  # all 5 of its cases are there


def _cells(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith("| `")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]


def test_fp16_without_a_scaler_is_not_the_mode_where_the_study_needs_the_scaler(
    tmp_path, monkeypatch
):
    rows = _rows("hf:t5", fp8=True)
    for mode, ms in (("fp16-amp-noscale", 1.5), ("fp16-amp", 1.6)):
        rows.append(timing_row(mode=mode, optimizer="fused", model="hf:t5", total_ms=ms))
        rows[-1]["peak_alloc_gib"] = 1.0
    run = results.load(write_run(tmp_path / "a", rows, gpu="NVIDIA H200"))
    (needed,) = _cells("\n".join(zoo.table([(run, [_study("hf:t5", training.NEEDED)])], "fused")))
    assert needed[2] == "fp16-amp-noscale (eager, 1.50 ms)"  # the fastest is still shown
    assert needed[3] == "fp16-amp (eager, 1.60 ms)" and needed[8].startswith("needed")
    (fine,) = _cells("\n".join(zoo.table([(run, [_study("hf:t5", training.NOT_NEEDED)])], "fused")))
    # Where the study finds the scaler not needed, fp16 without it is the fastest as well.
    assert fine[3] == "same" and fine[8].startswith("not needed")


def test_modes_inside_each_others_noise_are_tied_and_float8_within_it_neither_pays_nor_not(
    tmp_path, monkeypatch
):
    rows = _rows("hf:vit", fp8=True)
    for row in rows:  # p10-p90 of ±20% of each median: fp8-tensorwise 1.6-2.4, bf16-amp 2-3 ms
        row |= {"total_ms_p10": row["total_ms"] * 0.8, "total_ms_p90": row["total_ms"] * 1.2}
    run = results.load(write_run(tmp_path / "a", rows, gpu="NVIDIA H200"))
    (row,) = _cells("\n".join(zoo.table([(run, [_study("hf:vit", training.NEEDED)])], "fused")))
    # The old table: fp8-tensorwise the fastest (2.0 ms), and it "pays" 1.25× bf16-amp.
    assert row[2] == "tied: fp8-tensorwise (eager, 2.00 ms), bf16-amp (eager, 2.50 ms)"
    assert row[3] == "same"  # the study ruled none of them out
    assert row[4] == "5.00"  # of the first named: fp32's 10 ms over 2 ms
    assert row[7] == "within noise: fp8-tensorwise 1.25× bf16-amp"


def test_an_old_ok_float8_row_that_converted_nothing_is_unsupported_in_the_table(tmp_path):
    rows = [r for r in _rows("hf:bert", fp8=True) if r["mode"] != "fp8-tensorwise"]
    run = results.load(write_run(tmp_path / "a", rows, gpu="NVIDIA H200"))
    (row,) = _cells("\n".join(zoo.table([(run, [])], "fused")))
    # fp8-rowwise (2.4 ms, converting nothing) was the old table's fastest and "paid" 1.04×.
    assert row[2] == "bf16-amp (eager, 2.50 ms)"
    assert row[7] == "unsupported: converts no Linear"


def test_a_float8_ratio_from_one_round_is_not_decided(tmp_path, monkeypatch):
    # Finding 8: "pays: 1.04×" (llama 1b) came from one process and one round.
    rows = _rows("hf:vit", fp8=True)
    for row in rows:
        row["rounds"] = 1
    run = results.load(write_run(tmp_path / "a", rows, gpu="NVIDIA H200"))
    (row,) = _cells("\n".join(zoo.table([(run, [_study("hf:vit", training.NEEDED)])], "fused")))
    assert row[7] == "one round: not decided: fp8-tensorwise 1.25× bf16-amp"


def test_a_study_at_another_size_does_not_fill_the_rows_verdicts(tmp_path, monkeypatch):
    # Finding 5: the gpt2 row is timed at vocab 50257; its study trained vocab 65.
    rows = _rows("hf:gpt2", fp8=True)
    for row in rows:
        row |= {"input_size": 1024, "hidden_size": 50257, "num_classes": 1}
    run = results.load(write_run(tmp_path / "a", rows, gpu="NVIDIA H200"))
    study = _study("hf:gpt2", training.NEEDED)
    study["env"] = {"size": "ZooSize(preset='default', shape=Shape(vocab=65, classes=0))"}
    (row,) = _cells("\n".join(zoo.table([(run, [study])], "fused")))
    assert row[3] == "not known (studied at vocab 65)"
    assert row[8] == "not known (studied at vocab 65)"
    study["env"] = {"size": "ZooSize(preset='default', shape=Shape(vocab=50257, classes=0))"}
    (row,) = _cells("\n".join(zoo.table([(run, [study])], "fused")))
    assert row[8] == "needed"


def test_a_study_whose_step_orders_modes_otherwise_is_named(tmp_path, monkeypatch):
    # Finding 4: the study timed tf32 ahead of fp16-amp (its own clipped step), the timing run
    # the other way; the page must say so rather than rank the two both ways unremarked.
    import pandas as pd

    rows = _rows("hf:vit", fp8=True)
    run = results.load(write_run(tmp_path / "a", rows, gpu="NVIDIA H200"))
    study = _study("hf:vit", training.NEEDED)
    study["tables"] = {"timing": pd.DataFrame([
        {"mode": "fp32", "status": "ok", "step_ms": 30.0},
        {"mode": "tf32", "status": "ok", "step_ms": 13.0},
        {"mode": "bf16-amp", "status": "ok", "step_ms": 16.0},
    ])}  # fmt: skip
    text = "\n".join(zoo.table([(run, [study])], "fused"))
    assert "orders these pairs the other way round: tf32 vs bf16-amp;" in text
    assert "fp32 vs tf32" not in text  # the order both agree on is not named
