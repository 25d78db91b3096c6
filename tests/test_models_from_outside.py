"""Models as users bring them: any output type, structure found in the module tree (wrappers,
tied heads, `Conv1D`), zoo names, float8 plans of any workload, and bad names. CPU, tiny sizes,
models built here."""

from __future__ import annotations

import copy
import types
from collections import OrderedDict

import pytest
import torch
from torch import nn

from bench.cli.main import main
from bench.modes import fp8
from bench.modes.mode import MODES
from bench.numerics.measure import tables
from bench.plan.plan import resolve
from bench.plan.step import build, train_step
from bench.store import results
from bench.workloads import heads, outputs, structure
from bench.workloads.base import from_model
from bench.workloads.registry import ZOOS, get, make_case
from bench.workloads.zoo import common
from tests import own_models

# --- outputs -------------------------------------------------------------------------------


class Output(OrderedDict):
    """A stand-in for transformers' ModelOutput: a dict whose fields are attributes too."""

    def __getattr__(self, name):
        return self[name]


def test_the_tensor_of_any_output_is_its_logits():
    t = torch.ones(2, 3)
    aux = torch.zeros(1)
    assert outputs.tensor(t) is t
    assert outputs.tensor((t, aux)) is t
    assert outputs.tensor({"aux": aux, "logits": t}) is t  # the logits, not the first value
    assert outputs.tensor(Output(loss=aux, logits=t)) is t
    assert outputs.tensor(types.SimpleNamespace(logits=t)) is t
    assert outputs.tensor([None, (t,)]) is t
    with pytest.raises(TypeError, match="returned NoneType"):
        outputs.tensor(None)


def test_to_float_keeps_the_output_type():
    out = outputs.to_float((torch.ones(2, dtype=torch.bfloat16), torch.ones(2, dtype=torch.long)))
    assert isinstance(out, tuple) and out[0].dtype == torch.float32 and out[1].dtype == torch.long


# --- models users write (tests/own_models.py) ------------------------------------------------

IDS = torch.zeros(1, own_models.SEQ, dtype=torch.long)


def test_the_structure_of_a_tied_lm_is_found_with_the_real_names():
    model = own_models.TiedLM()
    found = structure.find(model, IDS)
    assert found.blocks == ("blocks.0", "blocks.1")
    assert found.observed == ("wte", "blocks.0", "blocks.1", "")
    assert found.audited == "blocks.0.fc.weight"
    assert found.head == "lm_head"
    assert structure.tied(model) == {"lm_head.weight": "wte.weight"}
    kept = structure.fp8_excluded(model)
    assert set(kept) == {"lm_head"} and "tied to wte.weight" in kept["lm_head"]


def test_a_wrapper_that_calls_submodules_directly_is_searched_inside():
    found = structure.find(own_models.Wrapper(), IDS)
    assert found.blocks == ("inner.blocks.0", "inner.blocks.1")
    assert found.observed[0] == "inner.wte" and found.observed[-1] == ""


def test_a_tied_head_as_the_first_matmul_is_audited_under_its_real_name():
    class HeadOnly(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(own_models.VOCAB, own_models.WIDTH)
            self.head = nn.Linear(own_models.WIDTH, own_models.VOCAB, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, ids):
            return self.head(self.wte(ids))

    assert structure.find(HeadOnly(), IDS).audited == "wte.weight"  # listed once, first name


def test_a_sequential_models_output_is_observed_once():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    found = structure.find(model, torch.zeros(1, 4))
    assert found.observed == ("0", "1", "2") and found.blocks == ()


@pytest.mark.parametrize("factory", ["tied_lm", "wrapper"])
def test_a_users_model_trains_in_every_cpu_mode_and_is_studied(factory, tmp_path):
    spec = f"tests.own_models:{factory}"
    for mode in ("fp32", "fp16-amp", "bf16-amp", "bf16-pure"):
        case = make_case(
            spec, "default", mode=mode, optimizer="foreach", batch_size=2, device="cpu"
        )
        assert torch.isfinite(train_step(build(resolve(case))))
    study = ["numerics", "--device", "cpu", "--model", spec, "--modes", "fp32,fp16-amp"]
    study += ["--census-batch-sizes", "1", "--checkpoints", "0,2", "--histogram-batch", "1"]
    study += ["--conv-batch-sizes", "2", "--seeds", "0", "--steps", "4", "--long-steps", "0"]
    study += ["--eval-every", "2", "--heldout", "4", "--results-dir", str(tmp_path)]
    assert main(study) == 0
    (folder,) = list(tmp_path.iterdir())
    t = tables.load(folder)
    census = t["census"]
    observed = list(dict.fromkeys(census.loc[census["kind"] == tables.ACTIVATION_GRAD, "module"]))
    prefix = "inner." if factory == "wrapper" else ""
    model = "Wrapper" if factory == "wrapper" else "TiedLM"
    assert observed == [f"{prefix}wte", f"{prefix}blocks.0", f"{prefix}blocks.1", model]


def test_blocks_and_observed_given_explicitly_replace_the_search():
    workload = from_model(
        "tied-lm",
        lambda device: own_models.TiedLM().to(device),
        own_models.tokens,
        own_models.logits_loss,
        blocks=lambda m: [m.blocks[1]],
        observed=lambda m: {"head": m.lm_head},
    )
    model = own_models.TiedLM()
    assert workload.blocks_of(model, None) == [model.blocks[1]]
    assert workload.observed_of(model, None) == {"head": model.lm_head}


# --- float8 on any workload ----------------------------------------------------------------


def test_float8_prepares_a_model_of_no_size_and_names_what_it_converts(monkeypatch):
    workload = own_models.tied_lm()
    plan = fp8.plan(workload, None, "tensorwise")
    assert plan["lm_head"].startswith("kept: ") and "tied" in plan["lm_head"]
    assert set(plan) == {"blocks.0.fc", "blocks.1.fc", "lm_head"}
    seen = {}
    monkeypatch.setattr(fp8, "convert", lambda m, w, size, mode: seen.setdefault("m", m))
    model = MODES["fp8-tensorwise"].prepare(own_models.TiedLM(), workload, None)  # no ValueError
    assert seen["m"] is model


def test_a_conv1d_becomes_the_linear_it_is():
    transformers = pytest.importorskip("transformers")
    from transformers.pytorch_utils import Conv1D

    conv = Conv1D(12, 8)  # nf=12 outputs, nx=8 inputs
    nn.init.normal_(conv.weight)
    nn.init.normal_(conv.bias)
    linear = fp8.as_linear(conv)
    x = torch.randn(3, 8)
    assert structure.linear_shape(conv) == (8, 12) == structure.linear_shape(linear)
    torch.testing.assert_close(linear(x), conv(x))
    assert transformers  # imported for Conv1D


def test_weights_copy_into_a_model_whose_conv1d_became_a_linear():
    # The numerics census gives a float8 model the trajectory's weights: GPT-2's projections
    # are Conv1D there and Linear here, their weights each other's transpose.
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40, n_positions=8)
    source = transformers.GPT2LMHeadModel(config).eval()
    converted = copy.deepcopy(source)
    for name in ("transformer.h.0.attn.c_attn", "transformer.h.0.mlp.c_fc"):
        converted.set_submodule(name, fp8.as_linear(converted.get_submodule(name)))
    with torch.no_grad():
        for p in converted.parameters():
            p.zero_()
    fp8.copy_weights(converted, source)
    ids = torch.randint(0, 40, (2, 8))
    torch.testing.assert_close(converted(ids).logits, source(ids).logits)
    assert converted.lm_head.weight is converted.transformer.wte.weight  # still tied


# --- zoo names -------------------------------------------------------------------------------


def test_zoo_names_parse_and_bad_ones_are_one_line(tmp_path, capsys):
    pytest.importorskip("transformers")
    pytest.importorskip("timm")
    argv = ["run", "--device", "cpu", "--preset", "tiny", "--results-dir", str(tmp_path)]
    for bad, said in (
        ("hf:no-such-model", "not a transformers model type"),
        ("timm:no_such_net", "timm has no model"),
        ("torchvision:no_such_net", "not one of torchvision's classification models"),
    ):
        assert main([*argv, "--model", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and bad in err[0] and said in err[0]
    assert not any(tmp_path.iterdir())
    # A config.json of the user's that names no model type says what to add.
    config = tmp_path.parent / "config.json"
    config.write_text('{"n_layer": 2, "n_embd": 64}')
    assert main([*argv, "--model", f"hf:{config}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model_type None" in err[0] and '"model_type": "gpt2"' in err[0]


def test_a_head_ampbench_cannot_feed_is_an_unsupported_row():
    pytest.importorskip("transformers")
    workload = get("hf:vit:causal-lm")
    reason = workload.unsupported_reason()
    assert "no causal-lm head" in reason and "image-cls" in reason
    case = make_case(
        "hf:vit:causal-lm", "tiny", mode="fp32", optimizer="foreach", batch_size=2, device="cpu"
    )
    assert "no causal-lm head" in resolve(case).unsupported_reason


def test_a_missing_zoo_is_an_unsupported_row_with_the_install_line(monkeypatch, tmp_path):
    monkeypatch.setattr(common, "importable", lambda module: False)
    workload = ZOOS["timm"]("resnet18")
    assert "pip install -e '.[zoo]'" in workload.unsupported_reason()
    monkeypatch.setattr("bench.workloads.registry.get", lambda name: workload)
    get.cache_clear()
    argv = ["maxbatch", "--device", "cpu", "--preset", "tiny", "--model", "timm:resnet18"]
    assert main([*argv, "--modes", "fp32", "--results-dir", str(tmp_path)]) == 0


def test_a_zoo_models_tasks_make_their_batches():
    lm = heads.Shape(task="masked-lm", seq=16, vocab=50, pad=0)
    x, y = heads.make_batch(lm, 4, "cpu", 0)
    masked = y != heads.IGNORE
    assert masked.any() and (x[masked] == 49).all() and (y[~masked] == heads.IGNORE).all()
    assert (x[~masked] != 0).all()  # never the padding id
    cls = heads.Shape(task="seq-cls", seq=8, vocab=10, pad=3, classes=5)
    x, y = heads.make_batch(cls, 64, "cpu", 0)
    assert (x != 3).all() and x.max() == 9 and y.shape == (64,) and y.max() < 5
    img = heads.Shape(task="image-cls", image=8, classes=3)
    x, y = heads.make_batch(img, 2, "cpu", 0)
    assert x.shape == (2, 3, 8, 8) and x.is_contiguous(memory_format=torch.channels_last)
    with pytest.raises(ValueError, match="unknown task 'nope'"):
        heads.Shape(task="nope")


def test_the_docs_hf_example_runs_as_it_is(tmp_path):
    pytest.importorskip("transformers")
    argv = ["run", "--device", "cpu", "--model", "examples.hf_model:workload"]
    argv += ["--batch-sizes", "2", "--optimizers", "foreach", "--modes", "fp32,bf16-amp"]
    argv += ["--steps", "1", "--warmup", "0", "--no-overhead", "--results-dir", str(tmp_path)]
    assert main(argv) == 0
    (folder,) = list(tmp_path.iterdir())
    df = results.load(folder)
    assert list(df["status"]) == ["ok", "ok"]
    assert dict(zip(df["mode"], df["output_dtype"], strict=True))["bf16-amp"] == "bfloat16"


def test_a_zoo_model_has_its_own_batch_sizes_and_study_sizes():
    pytest.importorskip("transformers")
    pytest.importorskip("timm")
    from bench.cases.grid import DEFAULT_BATCH_SIZES
    from bench.jobs.configs import run_config
    from bench.numerics.measure.config import defaults

    # Where --batch-sizes is not given: sequences of a transformer, images of a CNN, never the
    # MLP's thousands; given, they are what the user asked for.
    sizes = {
        model: (
            run_config(device="cuda", preset=None, model=model).batch_sizes,
            run_config(device="cpu", preset=None, model=model).batch_sizes,
        )
        for model in ("hf:gpt2", "timm:resnet18", "mlp")
    }
    assert sizes["hf:gpt2"] == ((8, 32), (2, 8))
    assert sizes["timm:resnet18"] == ((32, 128), (2, 8))
    assert sizes["mlp"] == (DEFAULT_BATCH_SIZES, DEFAULT_BATCH_SIZES)
    asked = run_config(device="cpu", preset=None, model="hf:gpt2", batch_sizes=[4])
    assert asked.batch_sizes == (4,)
    # The harness-overhead check: on the CPU for the MLP alone, on a GPU for every model.
    on = {m: run_config(device="cpu", preset=None, model=m).overhead for m in sizes}
    assert on == {"hf:gpt2": False, "timm:resnet18": False, "mlp": True}
    assert run_config(device="cuda", preset=None, model="hf:gpt2").overhead
    # A GPU study of a zoo model at its real size: batches that fit, a held-out set of its own.
    text, image, mlp = (defaults("cuda", m) for m in ("hf:gpt2", "timm:resnet18", "mlp"))
    assert text["census_batch_sizes"] == (2, 8) and text["heldout"] == 32
    assert image["conv_batch_sizes"] == (32, 128) and image["heldout"] == 256
    assert max(mlp["census_batch_sizes"]) > max(image["census_batch_sizes"])


@pytest.mark.parametrize("spec", ["hf:bert:causal-lm", "hf:gpt2"])
def test_a_causal_lm_never_sees_the_token_it_predicts(spec):
    pytest.importorskip("transformers")
    import torch

    from bench.workloads.registry import get

    workload = get(spec)
    size = workload.size("tiny")
    model = workload.build(size, "cpu", 0).eval()
    x, _ = workload.make_batch(size, 1, "cpu", 0)
    later = x.clone()
    later[0, 10] = (later[0, 10] + 1) % 200  # a token after position 9 changes...
    with torch.no_grad():
        before, after = model(input_ids=x).logits, model(input_ids=later).logits
    assert torch.equal(before[0, :10], after[0, :10])  # ...and no prediction before it does
