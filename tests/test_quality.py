"""The time-to-quality study on the CPU: the bundled data, the gpt sized to it, a tiny study end
to end (its tables, report and resume), and bad input."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch

from bench.cli import main
from bench.data import sources
from bench.faults import UsageError
from bench.quality import tables
from bench.quality.config import QualityConfig
from bench.quality.feed import Feed
from bench.quality.job import config, one_run
from bench.quality.train import Run, lr_at
from bench.workloads import gpt

TINY = {
    "steps": 4,
    "eval_every": 2,
    "batch_size": 2,
    "heldout_limit": 4,
    "timing_steps": 2,
    "warmup": 1,
}
"""A study of seconds: 4 steps of 2 sequences, 4 held-out windows."""


def test_shakespeare_is_split_as_nanogpt_splits_it():
    text = sources.get("shakespeare")
    assert text.shape.vocab == 65
    assert text.split == 1_003_854
    held = text.heldout(context=256, batch_size=64, device="cpu")
    x, y = held[0]
    # Non-overlapping windows, each target the next character of its input.
    assert torch.equal(x[0, 1:], y[0, :-1]) and torch.equal(x[1, 0], y[0, -1])
    windows = sum(len(b[0]) for b in held)
    assert windows == (1_115_394 - 1_003_854 - 1) // 256


def test_digits_are_real_and_held_out_apart():
    digits = sources.get("digits")
    assert digits.shape.classes == 10 and digits.split == 1437
    x, y = digits.train_batch(5, 16, torch.Generator().manual_seed(0), "cpu")
    assert x.shape == (5, 3, 16, 16) and y.shape == (5,) and y.max() < 10
    assert sum(len(b[1]) for b in digits.heldout(16, 100, "cpu")) == 1797 - 1437


@pytest.mark.parametrize(
    ("content", "needle"),
    [(None, "no such file"), (b"", "empty"), (b"\xff\xfe\x00\x01", "not UTF-8")],
)
def test_bad_data_is_one_line_naming_the_file(tmp_path, content, needle, capsys):
    path = tmp_path / "data.txt"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UsageError, match=needle):
        sources.get(str(path))
    assert main(["quality", "--device", "cpu", "--data", str(path), "--results-dir",
                 str(tmp_path / "out")]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0]
    assert not (tmp_path / "out").exists()


def test_the_shakespeare_preset_is_nanogpts_model_sized_to_the_text():
    cfg = QualityConfig.build("cpu", {"preset": "shakespeare-char"})
    fitted = one_run(cfg, "fp32").fitted
    assert fitted.size.vocab == 65 and fitted.size.tied and not fitted.size.bias
    model = fitted.workload.build(fitted.size, "cpu", 0)
    assert model.head.weight is model.embed.tok.weight  # tied after the model got storage
    n = sum(p.numel() for p in model.parameters())
    assert n == gpt.num_params(fitted.size)
    assert fitted.size.dropout == 0.2 and model.training


def test_same_weights_and_batches_for_every_mode_of_a_seed():
    cfg = QualityConfig.build("cpu", {**TINY, "modes": ("fp32", "bf16-amp")})
    a, b = Run(cfg, one_run(cfg, "fp32"), 1), Run(cfg, one_run(cfg, "bf16-amp"), 1)
    for p, q in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert torch.equal(a.feed.train(3)[0], b.feed.train(3)[0])
    assert not torch.equal(a.feed.train(3)[0], Feed(a.fitted, 2, 2, "cpu").train(3)[0])


def test_the_schedule_is_nanogpts():
    cfg = QualityConfig.build("cpu", {"steps": 1000, "warmup": 100})
    assert lr_at(cfg, 0) == pytest.approx(1e-3 / 101)
    assert lr_at(cfg, 100) == pytest.approx(1e-3)
    assert lr_at(cfg, 1000) == pytest.approx(1e-4)


def test_a_tiny_study_end_to_end_and_its_resume(tmp_path, capsys, monkeypatch):
    # The tree named one commit, clean, whatever git says of it.
    monkeypatch.setenv("AMPBENCH_GIT_COMMIT", "1234567aaaaaaa")
    monkeypatch.setenv("AMPBENCH_GIT_DIRTY", "0")
    monkeypatch.setenv("AMPBENCH_GIT_OVERRIDE", "1")
    argv = ["quality", "--device", "cpu", "--results-dir", str(tmp_path), "--seeds", "0,1,2",
            "--modes", "fp32,fp16-amp,fp16-amp-noscale"]  # fmt: skip
    for key, value in TINY.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    assert main([*argv, "--budget-s", "0.001"]) == 0  # no run fits: every run left for resume
    (run_dir,) = tmp_path.iterdir()
    assert tables.done(run_dir) == set()
    assert "ended" not in json.loads((run_dir / "env.json").read_text())
    resume = ["quality", "--resume", str(run_dir)]
    # Before any loss is on disk, a fixed study's plan may still grow.
    assert main([*resume, "--add-seeds", "3", "--budget-s", "0.001"]) == 0
    assert main([*resume, "--only", "fp32"]) == 0
    assert {m for m, _ in tables.done(run_dir)} == {"fp32"}
    assert main([*resume, "--add-modes", "bf16-amp"]) == 0
    t = tables.load(run_dir)
    assert len(t["runs"]) == 16 and set(t["runs"]["status"]) == {"ok"}
    assert set(t["runs"]["seed"]) == {0, 1, 2, 3} and set(t["runs"]["commit"]) == {"1234567"}
    # After it, more seeds would judge it again: refused, naming the study that would be valid.
    assert main([*resume, "--add-seeds", "4"]) == 2
    assert "--seeds 0,1,2,3 --max-seeds 5" in capsys.readouterr().err
    # Evaluations at 0, 2 and 4; the scaled fp16 runs checked GradScaler at each.
    assert sorted(t["curves"]["step"].unique()) == [0, 2, 4]
    assert set(t["checks"]["mode"]) == {"fp16-amp"}
    assert set(t["timing"]["mode"]) == {"fp32", "fp16-amp", "fp16-amp-noscale", "bf16-amp"}
    report = (run_dir / "report.md").read_text()
    # Four steps learn nothing: no target, and no mode judged.
    assert "**Target**: none: fp32's best is not 25% below its value before training" in report
    assert "trains like fp32 (" not in report
    assert (run_dir / "curves.png").is_file()
    assert "ended" in json.loads((run_dir / "env.json").read_text())


def test_a_model_that_cannot_be_sized_to_the_data_is_unsupported(tmp_path):
    argv = ["quality", "--device", "cpu", "--model", "mlp", "--results-dir", str(tmp_path),
            "--modes", "fp32"]  # fmt: skip
    assert main(argv) == 0
    (run_dir,) = tmp_path.iterdir()
    runs = tables.load(run_dir)["runs"]
    assert set(runs["status"]) == {"unsupported"}
    assert "cannot be sized to real data" in runs["error"].iloc[0]
    assert "unsupported" in (run_dir / "report.md").read_text()


def test_an_image_model_trains_on_the_digits(tmp_path):
    pytest.importorskip("timm")
    cfg = config("cpu", {**TINY, "model": "timm:resnet18", "data": "digits", "modes": ("fp32",)})
    fitted = one_run(cfg, "fp32").fitted
    assert fitted.size.shape.classes == 10
    run = Run(cfg, one_run(cfg, "fp32"), 0)
    loss = run.step(0)
    assert torch.isfinite(loss)
    heldout, accuracy = run.evaluate()
    assert heldout > 0 and 0 <= accuracy <= 1


def test_a_zoo_causal_lm_is_sized_to_the_text():
    pytest.importorskip("transformers")
    cfg = config("cpu", {**TINY, "model": "hf:gpt2", "modes": ("fp32",)})
    fitted = one_run(cfg, "fp32").fitted
    assert fitted.size.shape.vocab == 65
    model = fitted.workload.build(fitted.size, "cpu", 0)
    assert model.get_input_embeddings().num_embeddings == 65
    assert torch.isfinite(Run(cfg, one_run(cfg, "fp32"), 0).step(0))


def test_settings_are_checked_before_any_folder(tmp_path, capsys):
    for bad in (
        ["--seeds", "1,1"],
        ["--modes", "bf16-amp"],
        ["--min-lr", "0.1"],
        ["--add-seeds", "3"],
        ["--add-seeds", "-1"],
    ):
        assert main(["quality", "--device", "cpu", "--results-dir", str(tmp_path), *bad]) == 2
    assert not any(Path(tmp_path).iterdir())


def test_a_mode_with_a_seed_short_of_the_target_is_named_not_ranked():
    # tf32 trains like fp32 but one seed missed the target (fp32's worst seed's best): it has no
    # time to the target, and the fastest sentence must not read as if fp16-amp beat it.
    from bench.quality.render import report as page
    from bench.verdicts import training as rules

    like = rules.Verdict(rules.LIKE, "gap 0")
    timing = pd.DataFrame(
        [{"mode": m, "status": "ok", "step_ms": ms, "step_ms_p10": ms, "step_ms_p90": ms}
         for m, ms in (("fp32", 30.0), ("tf32", 13.0), ("fp16-amp", 17.0))]
    )  # fmt: skip
    reached = pd.DataFrame(
        [{"mode": m, "seed": i, "steps": st}
         for m, steps in (("fp32", [1600, 1700, 1800]), ("tf32", [1600, 1700, None]),
                          ("fp16-amp", [1500, 1600, 1700]))
         for i, st in enumerate(steps)]
    )  # fmt: skip
    s = {"verdicts": {"tf32": like, "fp16-amp": like}, "tables": {"timing": timing},
         "reached": reached}  # fmt: skip
    (line,) = [x for x in page._verdict_lines(s) if "Fastest" in x]
    assert "fp16-amp" in line and "the only one with every seed at the target" in line
    assert "Not ranked: tf32" in line


def test_fp32_alone_at_the_target_ranks_nothing():
    # Only fp32 reached the target in every seed: the old sentence named fp32 "the fastest that
    # trains like fp32", a comparison of fp32 with itself.
    from bench.quality.render import report as page
    from bench.verdicts import training as rules

    timing = pd.DataFrame(
        [{"mode": m, "status": "ok", "step_ms": ms, "step_ms_p10": ms, "step_ms_p90": ms}
         for m, ms in (("fp32", 139.0), ("bf16-amp", 29.6))]
    )  # fmt: skip
    reached = pd.DataFrame(
        [{"mode": m, "seed": i, "steps": st}
         for m, steps in (("fp32", [160, 180, 180]), ("bf16-amp", [160, None, None]))
         for i, st in enumerate(steps)]
    )  # fmt: skip
    s = {"verdicts": {"fp32": rules.Verdict(rules.LIKE, "gap 0"),
                      "bf16-amp": rules.Verdict(rules.NOT_KNOWN, "the interval crosses")},
         "tables": {"timing": timing}, "reached": reached}  # fmt: skip
    (line,) = [x for x in page._verdict_lines(s) if "Fastest" in x]
    assert line.startswith("- **Fastest to the target**: not known: fp32 alone")
    assert "among the modes that train like fp32: fp32" not in line


@pytest.mark.parametrize("model", ["gpt", "mlp"])
def test_a_preset_the_model_does_not_have_is_one_line_and_no_folder(model, tmp_path, capsys):
    # Not a study whose every row is `unsupported`: bad input, exit 2, before any folder.
    argv = ["quality", "--device", "cpu", "--model", model, "--preset", "nosuch"]
    assert main([*argv, "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--preset 'nosuch' is unknown" in err[0]
    assert not list(tmp_path.iterdir())


def test_the_gradscaler_check_counts_an_overflowed_element_as_not_kept(monkeypatch):
    # Two elements float16 flushes without the scaler (1e-12 and 1e-9 are below 2**-25); at the
    # scale 2**50 the first is kept (about 1e3) and the second overflows (about 1e6 > 65504):
    # GradScaler would skip that step, so the overflowed element is not kept, and says so.
    cfg = config("cpu", {**TINY, "modes": ("fp32", "fp16-amp")})
    run = Run(cfg, one_run(cfg, "fp16-amp"), 0)
    run.scaler._init_scale = 2.0**50  # the scale the check reads (no step taken yet)
    name, weight = next((n, p) for n, p in run.model.named_parameters() if p.numel() >= 2)
    grad = torch.zeros_like(weight).flatten()
    grad[:2] = torch.tensor([1e-12, 1e-9])
    grad = grad.view_as(weight)

    def loss(x, y, mode=None):
        if mode is run.reference:
            return (weight * grad).sum()
        # float16's backward: the gradient reaches the weight through a float16 tensor.
        return (weight.half().float() * grad).sum()

    monkeypatch.setattr(run, "loss", loss)
    (row,) = [r for r in run.scaler_check(0) if r["tensor"] == name]
    norm = math.hypot(1e-12, 1e-9)
    assert row["overflow"] and row["lost_unscaled"] == pytest.approx(1.0)
    assert row["kept_by_scaler"] == pytest.approx(1e-12 / norm)
    assert row["lost_scaled"] == pytest.approx(1e-9 / norm)
