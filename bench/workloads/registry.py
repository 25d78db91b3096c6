"""The workloads by name: the MLP of the seed question (`mlp`, the default), a GPT-style
transformer (`gpt`), torchvision's ResNet-50 (`resnet50`, when torchvision is installed), a
zoo model by name (`hf:NAME`, `timm:NAME`, `torchvision:NAME`: `ZOOS`, `bench.workloads.zoo`),
and a user's own model given as `package.module:factory`.

A user's factory is called with no arguments and returns a `Workload`
(`bench.workloads.base`). It is imported by its spec wherever a case is built, so that every
process of a run (a numerics worker, a torchrun rank) finds it the same way.

A case (`bench.cases.case.Case`) names its workload and preset and nothing of torch: this module
turns one into its workload (`get(case.model)`) and its size (`size_of`), and makes a case of a
workload's preset (`make_case`), so that the case sits below every registry.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import sys
from collections.abc import Callable

import torch
import torch.nn.functional as F

from bench.cases.case import Case
from bench.data.sources import DataShape
from bench.faults import UsageError
from bench.store import paths
from bench.workloads import gpt, mlp, resnet, tasks
from bench.workloads.base import Workload
from bench.workloads.zoo import common, hf, timm, torchvision

MLP = mlp.WORKLOAD


def _gpt_on_data(size: gpt.GPTSize, data: DataShape) -> gpt.GPTSize:
    if data.task != "causal-lm":
        raise ValueError(f"gpt is a causal LM; the data is for {data.task}")
    return dataclasses.replace(size, vocab=data.vocab)


def _gpt_loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction=reduction)


GPT = Workload(
    name="gpt",
    description="a GPT-2-style decoder: pre-LayerNorm blocks, causal SDPA, GELU MLP, vocab head",
    presets=gpt.PRESETS,
    default_preset={"cuda": "gpt2-124m", "cpu": "tiny"},
    build=lambda size, device, seed: gpt.build(size, device, seed),
    make_batch=gpt.make_batch,
    loss=_gpt_loss,
    linears=gpt.linear_shapes,
    fp8_excluded=lambda size: {
        name: why.removeprefix("kept: ")
        for name, why in gpt.fp8_plan(size).items()
        if why != "converted"
    },
    blocks=gpt.blocks,
    observed=gpt.observed,
    audited=lambda size: "blocks.0.attn.qkv.weight",
    dims=lambda size: (size.context, size.width, size.vocab),
    unit="tokens",
    per_sample=lambda size: size.context,
    fit_data=_gpt_on_data,
    task=lambda size, seed, noise, device: tasks.MarkovTask(
        vocab=size.vocab, context=size.context, seed=seed, noise=noise, device=device
    ),
    # Batch sizes in sequences of 1024 tokens: an MLP sample is one vector, a sequence a
    # thousand positions, each its own prediction. The held-out split is evaluated in chunks.
    # A zoo transformer's study, but trained at 1 and 2 sequences for 3000 steps more.
    numerics={
        "cuda": {**common.TEXT_NUMERICS["cuda"], "conv_batch_sizes": (1, 2), "long_steps": 3000},
    },
)

RESNET = Workload(
    name="resnet50",
    description="torchvision's ResNet-50 on synthetic images, channels-last",
    presets=resnet.PRESETS,
    default_preset={"cuda": "resnet50", "cpu": "tiny"},
    build=resnet.build,
    make_batch=resnet.make_batch,
    loss=resnet.loss,
    linears=resnet.linear_shapes,
    fp8_excluded=resnet.fp8_excluded,
    blocks=resnet.blocks,
    observed=resnet.observed,
    # Its one Linear, the head, as the audits published before the module-tree search.
    audited=lambda size: "fc.weight",
    dims=lambda size: (size.image, resnet.FEATURES, size.classes),
    # torchvision is an optional extra: without it every case is an `unsupported` row.
    unsupported_reason=resnet.unsupported_reason,
    # 224×224 images: the MLP's batch sizes of thousands would not fit, nor its 8192 held-out;
    # a zoo image model's study takes the same.
    numerics=common.IMAGE_NUMERICS,
)

WORKLOADS: dict[str, Workload] = {w.name: w for w in (MLP, GPT, RESNET)}
"""The built-in workloads; `get` also resolves a zoo model and a user's
`package.module:factory`."""

ZOOS: dict[str, Callable[[str], Workload]] = {
    "hf": hf.workload,
    "timm": timm.workload,
    "torchvision": torchvision.workload,
}
"""The zoos by the part of a `--model` value before its first colon: `PREFIX:NAME` is the
workload `ZOOS[PREFIX](NAME)` makes (`bench.workloads.zoo`)."""


def is_zoo(name: str) -> bool:
    """A zoo model, named `PREFIX:NAME`."""
    prefix, _, rest = name.partition(":")
    return prefix in ZOOS and bool(rest)


def is_spec(name: str) -> bool:
    """A user's own model, named by the factory that makes it."""
    return ":" in name and not is_zoo(name)


@functools.cache
def get(name: str) -> Workload:
    """The workload named `name`: a built-in one, or the one a user's factory returns. Bad input
    is one line (`UsageError`) naming the spec and what is wrong."""
    if name in WORKLOADS:
        return WORKLOADS[name]
    if is_zoo(name):
        prefix, _, rest = name.partition(":")
        return ZOOS[prefix](rest)
    if not is_spec(name):
        raise UsageError(
            f"--model {name}: not a workload; choose from {', '.join(WORKLOADS)}, "
            "a zoo model (hf:NAME, timm:NAME, torchvision:NAME) or package.module:factory"
        )
    module_name, _, attr = name.partition(":")
    # The module is the user's: looked up from the directory the command was run in (which
    # run_bench.sh leaves for the project's) as well as the project and the installed packages.
    user_dir = str(paths.from_user("."))
    if user_dir not in sys.path:
        sys.path.append(user_dir)
    try:
        module = importlib.import_module(module_name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UsageError(f"--model {name}: cannot import it ({type(exc).__name__}: {exc})") from exc
    factory = getattr(module, attr, None)
    if factory is None:  # the module imported: it is the factory that is missing
        raise UsageError(f"--model {name}: module {module_name} has no factory {attr!r}")
    try:
        made = factory()
    except Exception as exc:  # the user's code: whatever it raises is named in one line
        raise UsageError(f"--model {name}: the factory raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, Workload):
        raise UsageError(
            f"--model {name}: the factory returned {type(made).__name__}, not a "
            "bench.workloads.base.Workload"
        )
    return made


def size_of(case: Case) -> object:
    """The workload's size object of `case`: the MLP's `ModelSize` from the case's three sizes
    (any size, not only a preset's), another workload's from its preset."""
    if case.model == "mlp":
        return mlp.ModelSize.of(case)
    return get(case.model).size(case.preset)


def make_case(model: str, preset: str, **axes: object) -> Case:
    """A case of workload `model` at `preset`; `axes` are the other fields. The MLP's preset
    becomes its three sizes (and the case's preset stays empty, as before workloads); another
    workload's three id sizes come from its preset."""
    workload = get(model)
    sizes = workload.dims(workload.size(preset))
    dims = dict(zip(("input_size", "hidden_size", "num_classes"), sizes, strict=True))
    if model == "mlp":
        return Case(**dims, **axes)
    return Case(**dims, model=model, preset=preset, **axes)
