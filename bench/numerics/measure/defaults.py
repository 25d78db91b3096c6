"""The study's default settings per device, as plain data (`numerics --help` needs no torch)."""

from __future__ import annotations

LR = 3e-4
"""Adam's learning rate in the study: the seed question's 1e-3 learns the task but ends at a far
higher loss on the 16000-wide model; 3e-4 ends lowest of the rates tried."""

COMMON: dict[str, object] = {
    "noise": 2.0,
    "optimizer": "fused",
    "lr": LR,
    "loss_mult": 1.0,
    "reduction": "mean",
    "init_scale": 1.0,
    # Longer horizons are asked for, not run by default, e.g. extended_modes
    # (fp32, fp16-amp-noscale, fp16-amp) with extended_steps 3000.
    "extended_modes": (),
    "extended_steps": 0,
}
"""Settings that are the same on every device."""

PER_DEVICE: dict[str, dict[str, object]] = {
    "cuda": {
        "preset": "seed",
        "census_batch_sizes": (64, 256, 1024, 4096, 8192),
        "checkpoints": (0, 200, 1000),
        "histogram_batch": 1024,
        "conv_batch_sizes": (1024, 8192),
        "seeds": (0, 1),
        "steps": 1000,
        # One fp16 + GradScaler run goes this long, to show the scale grow (GradScaler doubles
        # it after 2000 clean steps in a row).
        "long_steps": 2500,
        "eval_every": 100,
        "heldout": 8192,
        "trace_every": 5,
    },
    "cpu": {  # a smoke run, tiny sizes, a few seconds
        "preset": "tiny",
        "census_batch_sizes": (8, 32),
        "checkpoints": (0, 10),
        "histogram_batch": 32,
        "conv_batch_sizes": (16, 32),
        "seeds": (0, 1),
        "steps": 40,
        "long_steps": 60,
        "eval_every": 10,
        "heldout": 256,
        "trace_every": 2,
    },
}
"""Settings that differ between a GPU study and a CPU smoke study: keys are field names of
`NumericsConfig`, plus `preset` (a key of `bench.workloads.mlp.PRESETS`)."""
