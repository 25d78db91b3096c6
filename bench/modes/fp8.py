"""What float8 modes need from outside torch: torchao and a float8 GPU
(`mode_unsupported_reason`), which Linears a mode converts and why (`plan`, torchao's
auto-filter restated with its reasons: docs/modes.md), the conversion (`convert`), and the
e4m3 `torch._scaled_mm` of the float8 matmul ceiling."""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import nn

from bench.workloads import structure

if TYPE_CHECKING:
    from bench.workloads.base import Workload

GRANULARITIES = ("tensorwise", "rowwise")
"""The float8 scalings ampbench runs (`Float8LinearConfig.from_recipe_name`)."""
MIN_CAPABILITY = (8, 9)
"""float8 tensor cores: Ada (8.9) and Hopper (9.0) onwards; `torch._scaled_mm` refuses below."""


def torchao_version() -> str | None:
    """torchao's version if it imports, else None."""
    try:
        importlib.import_module("torchao")
    except Exception:  # not installed, or built against another torch: either way not usable
        return None
    try:
        return importlib.metadata.version("torchao")
    except importlib.metadata.PackageNotFoundError:  # on sys.path without metadata (--target)
        return str(getattr(importlib.import_module("torchao"), "__version__", "unknown"))


def capability(device: str) -> tuple[int, int] | None:
    """The CUDA compute capability of the current GPU, or None on the CPU."""
    if device != "cuda" or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability()


def gpu_unsupported_reason(device: str) -> str | None:
    """Why float8 matmuls cannot run on `device` here, or None when they can."""
    if device != "cuda":
        return "float8 matmuls need a CUDA GPU of compute capability 8.9 or newer"
    cap = capability(device)
    if cap is None or cap < MIN_CAPABILITY:
        found = "none" if cap is None else f"{cap[0]}.{cap[1]}"
        return f"float8 matmuls need compute capability 8.9 or newer (this GPU: {found})"
    return None


def mode_unsupported_reason(*, device: str, torchao: bool, fp8: bool) -> str | None:
    """Why a mode that needs torchao (`torchao`) and, for float8, a float8 GPU (`fp8`) cannot
    run here, or None when it can."""
    if fp8 and (reason := gpu_unsupported_reason(device)) is not None:
        return reason
    if (torchao or fp8) and torchao_version() is None:
        return "needs torchao (pip install -e '.[fp8]'), which is not installed or does not import"
    return None


def plan(workload: Workload, size: object, scaling: str) -> dict[str, str]:
    """Linear module name -> `converted` or `kept: <why>`, for a float8 `scaling` on `workload`
    at `size`, in the workload's forward order: the workload's own exclusions first, then
    torchao's rules."""
    if scaling not in GRANULARITIES:
        raise ValueError(
            f"unknown float8 scaling {scaling!r}; choose from {', '.join(GRANULARITIES)}"
        )
    excluded = workload.fp8_excluded_of(size)
    return {
        name: f"kept: {excluded[name]}" if name in excluded else _decide(scaling, n=n, k=k)
        for name, (k, n) in workload.linears_of(size).items()
    }


def convertible(workload: Workload, size: object) -> list[str]:
    """The Linears of `workload` at `size` that float8 can run at all (not kept by the workload,
    both dimensions multiples of 16; torchao's size thresholds left out). None: float8 does not
    apply to this model at any size (ResNet-50, whose one Linear is its head)."""
    excluded = workload.fp8_excluded_of(size)
    return [
        name
        for name, (k, n) in workload.linears_of(size).items()
        if name not in excluded and not (k % 16 or n % 16)
    ]


def _decide(scaling: str, *, n: int, k: int) -> str:
    """torchao's auto-filter for one Linear of weight shape (N, K) = (out, in)."""
    if k % 16 or n % 16:
        return f"kept: in {k} × out {n} not both divisible by 16 (float8 GEMMs need it)"
    # Below these sizes torchao measured float8 slower than bf16 (casting and scaling cost more
    # than the faster GEMM saves).
    if scaling == "tensorwise" and k <= 4096 and n <= 1024:
        return f"kept: too small for tensorwise (in {k} ≤ 4096 and out {n} ≤ 1024)"
    if scaling == "rowwise":
        if n <= 2048:
            return f"kept: too small for rowwise (out {n} ≤ 2048)"
        if k <= 1024:
            return f"kept: too small for rowwise (in {k} ≤ 1024)"
        if n <= 4096 and k <= 2048:
            return f"kept: too small for rowwise (out {n} ≤ 4096 and in {k} ≤ 2048)"
    return "converted"


def describe(decisions: dict[str, str]) -> str:
    """One line for a row or a report: `blocks.0.attn.qkv converted; head kept: ...`."""
    return "; ".join(f"{name} {what}" for name, what in decisions.items())


def convert(model: nn.Module, workload: Workload, size: object, scaling: str) -> nn.Module:
    """`model` with the Linears `plan` chooses swapped for torchao's Float8Linear (in place),
    chosen by module name (torchao's filter sees each Linear's fully qualified name). A chosen
    transformers `Conv1D` (GPT-2's projections) first becomes the `nn.Linear` it is
    (`as_linear`): torchao converts `nn.Linear` modules only."""
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    chosen = {name for name, what in plan(workload, size, scaling).items() if what == "converted"}
    for name in chosen:
        module = model.get_submodule(name)
        if structure.is_conv1d(module):
            model.set_submodule(name, as_linear(module))
    keep: Callable[[nn.Module, str], bool] = lambda mod, fqn: fqn in chosen  # noqa: E731
    config = Float8LinearConfig.from_recipe_name(scaling)
    return convert_to_float8_training(model, config=config, module_filter_fn=keep)


def as_linear(conv1d: nn.Module) -> nn.Linear:
    """transformers' `Conv1D(nf, nx)` (y = x @ W + b, W stored (in, out)) as the `nn.Linear`
    computing the same function: its weight the transpose, a new parameter of the same values
    (made before the optimizer sees the model; a Conv1D's weight is never tied)."""
    k, n = conv1d.weight.shape
    weight = conv1d.weight
    linear = nn.Linear(k, n, bias=conv1d.bias is not None, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        linear.weight.copy_(weight.t())
        if conv1d.bias is not None:
            linear.bias.copy_(conv1d.bias)
    return linear


def copy_weights(converted: nn.Module, source: nn.Module) -> None:
    """Copy `source`'s parameters into `converted`, the same architecture after `convert`, by
    name (Float8Linear keeps `weight` and `bias`; `copy_` casts to the converted dtype). A
    `Conv1D` that `convert` made a Linear stores its weight transposed (`as_linear`), so that
    weight is copied as its transpose."""
    theirs = dict(source.named_parameters())
    with torch.no_grad():
        for name, p in converted.named_parameters():
            value = theirs[name]
            owner, _, leaf = name.rpartition(".")
            made_linear = structure.is_conv1d(source.get_submodule(owner)) and not (
                structure.is_conv1d(converted.get_submodule(owner))
            )
            p.copy_(value.t() if leaf == "weight" and made_linear else value)


def scaled_mm_operands(
    n: int, granularity: str, device: str, gen: torch.Generator
) -> tuple[torch.Tensor, ...]:
    """(a, b, scale_a, scale_b) of an n × n e4m3 `_scaled_mm`, in the layouts it requires: `a`
    row-major, `b` column-major; scales float32, one each (`tensorwise`) or per row of `a`
    (n, 1) and per column of `b` (1, n) (`rowwise`)."""
    a = torch.randn(n, n, generator=gen, device=device).to(torch.float8_e4m3fn)
    b = torch.randn(n, n, generator=gen, device=device).to(torch.float8_e4m3fn).t()
    if granularity == "tensorwise":
        sa = torch.ones((), device=device)
        sb = torch.ones((), device=device)
    elif granularity == "rowwise":
        sa = torch.ones(n, 1, device=device)
        sb = torch.ones(1, n, device=device)
    else:
        raise ValueError(f"unknown scale granularity {granularity!r}; choose from {GRANULARITIES}")
    return a, b, sa, sb


def scaled_mm(a: torch.Tensor, b: torch.Tensor, sa: torch.Tensor, sb: torch.Tensor) -> torch.Tensor:
    """The float8 GEMM torchao's Float8Linear runs, with a bf16 output as it asks for."""
    return torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
