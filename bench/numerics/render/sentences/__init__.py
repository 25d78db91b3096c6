"""The Answer's sentences by section, in its order: `dtypes` (the audit), `scaler` (underflow,
convergence and the verdict on GradScaler, with `divergence` in between: divergence, its traced
mechanism, the longer runs), `bf16`, `recipes` (beyond autocast). `bench.numerics.render.answer`
puts them together."""
