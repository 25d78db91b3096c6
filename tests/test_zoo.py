"""Conformance: real architectures from the three zoos, by name, at their tiny configs on the CPU,
through every stage a user runs: `run` (every mode the CPU can run, the others `unsupported`
rows with their reasons), DDP and FSDP2 on two gloo ranks, a short `numerics` study (its report
checked for a non-empty audit, observed logits and an Answer without placeholders), and
`maxbatch`.

CI runs every stage on `EVERY_STAGE` and `run` + `numerics` on `RUN_AND_NUMERICS` as well (one
step per case, to stay within minutes); `./run_tests.sh --zoo` runs every architecture of `ZOO`
through every stage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.cli.main import main
from bench.execution import launch
from bench.numerics.measure import tables, training
from bench.store import results

pytest.importorskip("transformers", reason="transformers is not installed (the [zoo] extra)")
pytest.importorskip("timm", reason="timm is not installed (the [zoo] extra)")
pytest.importorskip("torchvision", reason="torchvision is not installed (the [vision] extra)")

EVERY_STAGE = (
    "hf:gpt2",  # a decoder with its head tied to the token embedding; Conv1D projections
    "hf:llama",  # grouped-query attention, RMSNorm, SwiGLU
    "hf:bert",  # an encoder, masked LM
    "hf:t5",  # an encoder-decoder
    "timm:convnext_atto",  # depthwise convolutions
    "torchvision:resnet18",
)
RUN_AND_NUMERICS = (
    "hf:mistral",
    "hf:vit",
)
# Beside an architecture the lists above already take (qwen2: llama's; roberta: bert's; bart:
# t5's encoder-decoder; mobilenet_v3_small: convnext's depthwise convolutions), so they run with
# --zoo only: CI's minutes go to architectures that differ.
EXTENDED = (
    "hf:qwen2",
    "hf:roberta",
    "hf:bart",
    "torchvision:mobilenet_v3_small",
    "hf:opt",
    "hf:distilbert",
    "hf:swin",
    "hf:deit",
    "hf:bert:seq-cls",
    "timm:vit_tiny_patch16_224",
    "timm:resnet18",
    "timm:efficientnet_b0",
    "timm:mobilenetv3_small_050",
    "torchvision:efficientnet_b0",
    "torchvision:regnet_y_400mf",
    "torchvision:shufflenet_v2_x0_5",
    "torchvision:squeezenet1_1",
    "torchvision:mnasnet0_5",
)
ZOO = EVERY_STAGE + RUN_AND_NUMERICS + EXTENDED
WORKER = Path(__file__).resolve().parent / "dist_worker.py"


def _marked(specs: tuple[str, ...]) -> list:
    return [pytest.param(s, marks=pytest.mark.zoo) if s in EXTENDED else s for s in specs]


ONE_STEP = ("--steps", "1", "--warmup", "0", "--repeats", "1", "--no-overhead")
TINY = ("--device", "cpu", "--preset", "tiny")


def _folder(parent: Path) -> Path:
    (folder,) = [p for p in parent.iterdir() if p.is_dir()]
    return folder


@pytest.mark.parametrize("spec", _marked(ZOO))
def test_every_cpu_mode_runs_and_the_rest_are_unsupported_rows(spec, tmp_path):
    argv = ["run", *TINY, "--model", spec, "--batch-sizes", "2", "--optimizers", "foreach"]
    assert main([*argv, "--variants", "eager", *ONE_STEP, "--results-dir", str(tmp_path)]) == 0
    df = results.load(_folder(tmp_path))
    # The report says what --model built: the class (and task) behind the name.
    assert "random weights" in (_folder(tmp_path) / results.REPORT).read_text()
    assert set(df["status"]) <= {"ok", "unsupported"}, df[["mode", "status", "error"]]
    ok = df[df["status"] == "ok"]
    assert {"fp32", "bf16-amp", "fp16-amp"} <= set(ok["mode"])
    # The logits' dtype was found in whatever the model returned (BART adds a float32 bias to
    # its logits, so they are float32 even under bf16 autocast).
    dtypes = dict(zip(ok["mode"], ok["output_dtype"], strict=True))
    assert dtypes["fp32"] == "float32" and dtypes["bf16-amp"] in ("bfloat16", "float32")
    assert dtypes["bf16-pure"] == "bfloat16"
    assert (df.loc[df["status"] == "unsupported", "error"].str.len() > 0).all()
    assert (ok["fwd_gflop"] > 0).all() and (ok["bwd_gflop"] > ok["fwd_gflop"]).all()


SHORT_STUDY = (
    *("numerics", *TINY, "--modes", "fp32,fp16-amp,fp16-amp-noscale,bf16-amp"),
    *("--census-batch-sizes", "2", "--checkpoints", "0,2", "--histogram-batch", "2"),
    *("--conv-batch-sizes", "2", "--seeds", "0", "--steps", "2", "--long-steps", "0"),
    *("--eval-every", "2", "--heldout", "4", "--trace-every", "2"),
)
PLACEHOLDERS = ("not observed (", "ran in not observed", "() are not observed", " is .")


@pytest.fixture
def few_timed_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A study times each mode's step apart from its training, 5 warm-up and 20 timed steps
    whatever `--steps` says: on the CPU, where float16 convolutions have no fast kernel, those
    25 steps of the two fp16 modes took most of a CNN's study (9 minutes of torchvision's
    MobileNet's on 2 busy cores). What this suite checks of a study does not read the timing:
    1 warm-up and 2 timed steps still time the step as the study does."""
    real = training.time_settled

    def fewer(fns, *, warmup, steps, **kwargs):
        return real(fns, warmup=min(warmup, 1), steps=min(steps, 2), **kwargs)

    monkeypatch.setattr(training, "time_settled", fewer)


@pytest.mark.parametrize("spec", _marked(ZOO))
def test_a_short_study_audits_observes_the_logits_and_answers(spec, tmp_path, few_timed_steps):
    assert main([*SHORT_STUDY, "--model", spec, "--results-dir", str(tmp_path)]) == 0
    folder = _folder(tmp_path)
    t = tables.load(folder)
    audit = t["audit"]
    assert len(audit) and set(audit["mode"]) >= {"fp32", "fp16-amp", "bf16-amp"}
    acts = audit[audit["kind"] == tables.ACTIVATION]
    assert acts["tensor"].str.startswith("logits (").any()
    census = t["census"]
    assert len(census) and (census["kind"] == tables.ACTIVATION_GRAD).any()
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert re.search(r"^## \d+\. Answer", report, flags=re.M), "the report has no Answer"
    for text in PLACEHOLDERS:
        assert text not in report
    headings = [int(n) for n in re.findall(r"^## (\d+)\.", report, flags=re.M)]
    assert headings == list(range(1, len(headings) + 1))


@pytest.fixture(scope="module")
def two_ranks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """fp32 × DDP and FSDP2 on two gloo ranks for every model of this stage that the session
    runs, in one torchrun launch (`tests/dist_worker.py each-model`): its ranks start once, not
    once a model. Model -> the parent of its run folder, beside its run's exit status."""
    specs = EVERY_STAGE + (EXTENDED if request.config.getoption("--zoo") else ())
    parent = tmp_path_factory.mktemp("ddp-fsdp")
    argv = ["each-model", ",".join(specs), str(parent), "run", "--gpus", "2", *TINY]
    argv += ["--modes", "fp32", "--optimizers", "foreach", "--parallel", "ddp,fsdp"]
    argv += ["--batch-sizes", "2", *ONE_STEP, "--collective-timeout", "60"]
    launch.launch(2, argv, keep=[], worker=[str(WORKER)], log=lambda msg: None)
    return {spec: parent / str(i) for i, spec in enumerate(specs)}


@pytest.mark.parametrize("spec", _marked(EVERY_STAGE + EXTENDED))
def test_ddp_and_fsdp_on_two_gloo_ranks(spec, two_ranks):
    parent = two_ranks[spec]
    status = (parent / "exit_status").read_text()
    assert any(p.is_dir() for p in parent.iterdir()), f"no run folder (exit status {status})"
    df = results.load(_folder(parent))
    assert list(df["status"]) == ["ok", "ok"], df[["parallel", "status", "error"]]
    assert set(df["world_size"]) == {2} and list(df["parallel"]) == ["ddp", "fsdp"]
    assert status == "0"


@pytest.mark.parametrize("spec", _marked(EVERY_STAGE + EXTENDED))
def test_the_largest_batch_search_trains_it(spec, tmp_path):
    argv = ["maxbatch", *TINY, "--model", spec, "--modes", "fp32", "--start", "2"]
    argv += ["--limit", "4", "--steps", "1", "--warmup", "0", "--results-dir", str(tmp_path)]
    assert main(argv) == 0
    text = (_folder(tmp_path) / "report.md").read_text(encoding="utf-8")
    # Both trials trained: the search reached its limit.
    assert re.search(r"\| fp32 +\| eager +\| +4 \| ok ", text), text
