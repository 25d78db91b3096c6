"""Is ResNet-50's gradient at random initialisation sensitive to rounding anywhere? One training
step's weight gradients in fp32 and under bf16 autocast against fp64, on the CPU (torchvision's
ResNet-50, random weights, train mode, batch 8 of 224x224, random labels). The H200 numerics study
of `torchvision:resnet50` found bf16's and scaled fp16's gradients as far from fp32's as the
gradients are large; this asks whether fp32 itself is far from fp64 there.

Run: python scripts/resnet50_gradients_at_init_cpu.py (its output:
results/sessions/resnet50_gradients_at_init_cpu.log).
"""

from __future__ import annotations

import copy

import torch
import torchvision

torch.manual_seed(0)
torch.set_num_threads(2)
model = torchvision.models.resnet50(weights=None).train()
x = torch.randn(8, 3, 224, 224)
y = torch.randint(0, 1000, (8,))


def grads(dtype: torch.dtype | None = None, autocast: torch.dtype | None = None) -> dict:
    """Each parameter's gradient after one forward and backward of a copy of the model."""
    net = copy.deepcopy(model)
    inputs = x
    if dtype is not None:
        net, inputs = net.to(dtype), x.to(dtype)
    with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        out = net(inputs)
    torch.nn.functional.cross_entropy(out.float(), y).backward()
    return {n: p.grad.double() for n, p in net.named_parameters()}


exact, fp32, bf16 = grads(torch.float64), grads(), grads(autocast=torch.bfloat16)
for name in (
    "fc.weight",
    "layer4.2.conv3.weight",
    "layer4.0.conv1.weight",
    "layer3.0.conv1.weight",
    "layer1.0.conv1.weight",
    "conv1.weight",
):

    def rel(g: dict, name: str = name) -> float:
        return ((g[name] - exact[name]).norm() / exact[name].norm()).item()

    print(f"{name:28s} fp32 vs fp64 {rel(fp32):.2e}   bf16-amp vs fp64 {rel(bf16):.2e}")
