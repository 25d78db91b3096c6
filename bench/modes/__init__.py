"""The precision modes' torch side: `mode` (each card of `bench.ground.catalog` as torch objects:
the model's preparation, each phase's context, the loss scaler, the optimizer) and `fp8` (float8
conversion of a model's Linears); the plan and the step that use them are `bench.plan`. May
import: torch, `bench.workloads` and below."""
