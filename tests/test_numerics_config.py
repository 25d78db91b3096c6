"""The numerics study's settings: defaults per device, building from what the user gave, and
validation that names the field and the bad value."""

import dataclasses
import json
import math

import pytest

from bench.numerics.measure import config
from bench.numerics.measure.config import NumericsConfig
from bench.workloads.mlp import PRESETS


def _cpu(**options) -> NumericsConfig:
    return NumericsConfig.build(device="cpu", options=options, workers=None)


def test_defaults_per_device():
    fields = {f.name for f in dataclasses.fields(NumericsConfig)} - {"device", "size", "workers"}
    for device in ("cuda", "cpu"):
        d = config.defaults(device)
        assert set(d) == fields | {"preset"}
        assert (
            d["lr"] == 3e-4
            and d["modes"] == config.supported_modes(device)
            and d["optimizer"] == "fused"
        )
        assert (d["noise"], d["loss_mult"], d["reduction"], d["init_scale"]) == (
            2.0,
            1.0,
            "mean",
            1.0,
        )
    cuda, cpu = config.defaults("cuda"), config.defaults("cpu")
    assert cuda["census_batch_sizes"] == (64, 256, 1024, 4096, 8192) and cuda["preset"] == "seed"
    assert (cuda["checkpoints"], cuda["histogram_batch"], cuda["conv_batch_sizes"]) == (
        (0, 200, 1000),
        1024,
        (1024, 8192),
    )
    assert (cuda["steps"], cuda["long_steps"], cuda["eval_every"], cuda["heldout"]) == (
        1000,
        2500,
        100,
        8192,
    )
    assert cpu["census_batch_sizes"] == (8, 32) and cpu["histogram_batch"] == 32
    assert (cpu["checkpoints"], cpu["conv_batch_sizes"], cpu["seeds"]) == (
        (0, 10),
        (16, 32),
        (0, 1),
    )
    assert (cpu["steps"], cpu["long_steps"], cpu["eval_every"], cpu["heldout"]) == (40, 60, 10, 256)
    assert cpu["preset"] == "tiny"
    with pytest.raises(ValueError, match="'tpu'"):
        config.defaults("tpu")


def test_the_default_learning_rate_is_3e_4():
    assert _cpu().lr == 3e-4
    assert _cpu().record()["lr"] == 3e-4
    assert (
        config.short_config(
            device="cpu", size=PRESETS["tiny"], modes=["fp32"], batch_sizes=[8], optimizer="fused"
        ).lr
        == 3e-4
    )


def test_build_takes_what_was_given_and_defaults_the_rest():
    cfg = _cpu(census_batch_sizes=[8, 16], checkpoints=[5, 0], lr=1e-3, preset="tiny")
    assert cfg.census_batch_sizes == (8, 16) and cfg.checkpoints == (0, 5)  # sorted, tuples
    assert cfg.histogram_batch == 16  # the default (32) is not a census size: the last given
    assert cfg.lr == 1e-3 and cfg.size == PRESETS["tiny"] and cfg.workers == 1
    assert cfg.steps == 40 and cfg.modes == config.supported_modes("cpu")
    assert _cpu(census_batch_sizes=[8, 32]).histogram_batch == 32


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"lr_max": 1.0}, "'lr_max'"),
        ({"preset": "huge"}, "'huge'"),
        ({"histogram_batch": 7, "census_batch_sizes": [8]}, "--histogram-batch 7"),
    ],
)
def test_build_refuses_bad_options(options, named):
    with pytest.raises(ValueError, match=named):
        _cpu(**options)


def test_workers(monkeypatch):
    with pytest.raises(ValueError, match="--workers 2"):
        NumericsConfig.build(device="cpu", options={}, workers=2)
    monkeypatch.setattr(config, "gpu_count", lambda: 4)
    assert NumericsConfig.build(device="cuda", options={}, workers=None).workers == 4
    assert NumericsConfig.build(device="cuda", options={}, workers=3).workers == 3
    with pytest.raises(ValueError, match="--workers 5: only 4 GPU"):
        NumericsConfig.build(device="cuda", options={}, workers=5)
    with pytest.raises(ValueError, match="--workers 0"):
        NumericsConfig.build(device="cuda", options={}, workers=0)


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("modes", ("fp32", "fp8"), "^--modes 'fp8' is unknown; choose from fp32, "),
        ("modes", ("fp32", "fp32"), "^--modes 'fp32' is given twice$"),
        ("modes", (), "^--modes '' is not a non-empty tuple$"),
        ("census_batch_sizes", (), "^--census-batch-sizes '' "),
        ("census_batch_sizes", (8, 0), "^--census-batch-sizes 0 is not a positive integer$"),
        ("conv_batch_sizes", (16, 16), "^--conv-batch-sizes 16 is given twice$"),
        ("conv_batch_sizes", [16], r"^--conv-batch-sizes \[16\] "),
        ("checkpoints", (0, -1), "^--checkpoints -1 is not an integer >= 0$"),
        ("seeds", (0, 0), "^--seeds 0 is given twice$"),
        ("histogram_batch", 7, "^--histogram-batch 7 is not one of --census-batch-sizes 8,32$"),
        ("steps", 25, "^--steps 25 is not a multiple of --eval-every 10$"),
        ("steps", 0, "^--steps 0 is not a positive integer$"),
        ("eval_every", 0, "^--eval-every 0 "),
        ("long_steps", -1, "^--long-steps -1 "),
        ("heldout", 2.5, "^--heldout 2.5 "),
        ("workers", 0, "^--workers 0 "),
        ("lr", 0.0, "^--lr 0.0 is not a positive finite number$"),
        ("lr", -1e-3, "^--lr -0.001 "),
        ("lr", math.inf, "^--lr inf "),
        ("lr", math.nan, "^--lr nan "),
        ("lr", True, "^--lr True "),
        ("noise", 0, "^--noise 0 "),
        ("loss_mult", math.inf, "^--loss-mult inf "),
        ("init_scale", -0.1, "^--init-scale -0.1 "),
        ("optimizer", "sgd", "^--optimizer 'sgd' is unknown; choose from "),
        ("reduction", "max", "^--reduction 'max' "),
        ("device", "tpu", "^--device 'tpu' "),
    ],
)
def test_validation_names_the_field_and_the_value(field, value, named):
    cfg = _cpu()
    with pytest.raises(ValueError, match=named):
        dataclasses.replace(cfg, **{field: value})


def test_record_round_trip_through_json():
    cfg = _cpu(seeds=[3], lr=1e-3, reduction="sum")
    record = json.loads(json.dumps(cfg.record()))
    assert record["sizes"] == PRESETS["tiny"].named() and "size" not in record
    assert NumericsConfig.from_record(record, workers=1) == cfg


def test_jobs_of_a_study():
    cfg = _cpu(census_batch_sizes=[8, 32], histogram_batch=32, modes=["fp32", "fp16-amp"])
    census = [j for j in cfg.jobs() if j.kind == "census"]
    assert [(j.case.batch_size, j.histogram, j.case.mode) for j in census] == [
        (8, False, "fp16-amp"),
        (32, True, "fp16-amp"),
    ]
    conv = [j for j in cfg.jobs() if j.kind == "convergence"]
    assert len(conv) == 2 * 2 * 2  # batch sizes x modes x seeds
    long = [j for j in conv if j.steps != cfg.steps]
    assert [(j.case.mode, j.case.batch_size, j.case.seed, j.steps) for j in long] == [
        ("fp16-amp", 16, 0, 60)
    ]
    assert len({j.key for j in cfg.jobs()}) == len(cfg.jobs())
    assert {j.case.lr for j in cfg.jobs()} == {3e-4}


def test_trace_and_extended_settings():
    assert (config.defaults("cuda")["trace_every"], config.defaults("cpu")["trace_every"]) == (5, 2)
    assert config.defaults("cuda")["extended_modes"] == () and _cpu().extended_steps == 0
    cfg = _cpu(
        modes=["fp32", "fp16-amp", "fp16-amp-noscale", "bf16-amp"],
        extended_modes=["fp32", "fp16-amp-noscale", "fp16-amp"],
        extended_steps=300,
        trace_every=0,
    )
    conv = [j for j in cfg.jobs() if j.kind == "convergence"]
    assert {(j.case.mode, j.steps) for j in conv} == {
        ("fp32", 300),
        ("fp16-amp", 300),
        ("fp16-amp-noscale", 300),
        ("bf16-amp", 40),
    }
    assert {j.trace_every for j in conv} == {0}
    with pytest.raises(ValueError, match=r"^--extended-modes 'tf32' is not one of --modes fp32$"):
        _cpu(modes=["fp32"], extended_modes=["tf32"], extended_steps=300)
    with pytest.raises(ValueError, match=r"^--extended-steps 0 must be positive with --extended-"):
        _cpu(extended_modes=["fp32"])
    with pytest.raises(ValueError, match=r"^--trace-every -1 "):
        _cpu(trace_every=-1)


def test_a_record_older_than_the_traces_resumes_without_them():
    record = json.loads(json.dumps(_cpu().record()))
    for name in ("trace_every", "extended_modes", "extended_steps"):
        del record[name]
    cfg = NumericsConfig.from_record(record, workers=1)
    assert (cfg.trace_every, cfg.extended_modes, cfg.extended_steps) == (0, (), 0)


def test_the_command_line_names_the_options(capsys):
    from bench.cli import main

    assert main(["numerics", "--device", "cpu", "--steps", "5"]) == 2
    assert capsys.readouterr().err == (
        "ampbench: error: --steps 5 is not a multiple of --eval-every 10\n"
    )


@pytest.mark.parametrize("command", ["numerics", "run"])
def test_the_help_names_every_built_in_model(command, capsys):
    from bench.cli import main
    from bench.ground import cards

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    model = text[text.rindex("--model MODEL") :].split(" --", 1)[0]  # its help, not the usage
    for name in cards.CARDS:
        assert name in model, f"{command} --help does not name {name}"
