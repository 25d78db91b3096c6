"""The MLP's work per step by hand: the oracle the counted FLOPs (`bench.measure.roofline`,
through `torch.utils.flop_counter`) must equal for the MLP. Not used by ampbench itself."""

from bench.workloads.mlp import ModelSize


def num_params(size: ModelSize) -> int:
    return sum(i * o + o for i, o in size.linears())


def matmul_flops_per_linear(size: ModelSize, batch_size: int) -> list[dict[str, float]]:
    """Matmul FLOPs of one step per Linear (fc1, fc2, fc3) and phase.

    Forward: 2*B*in*out per Linear. Backward: the input gradient and the weight gradient, 2*B*in*out
    each, except fc1's input gradient, which nothing needs (the data does not require grad).
    """
    out = []
    for n, (i, o) in enumerate(size.linears()):
        fwd = 2.0 * batch_size * i * o
        out.append({"fwd": fwd, "bwd": fwd if n == 0 else 2.0 * fwd})
    return out


def matmul_flops(size: ModelSize, batch_size: int) -> dict[str, float]:
    """Matmul FLOPs of one step, per phase: {"fwd": ..., "bwd": ...}."""
    per_linear = matmul_flops_per_linear(size, batch_size)
    return {phase: sum(f[phase] for f in per_linear) for phase in ("fwd", "bwd")}
