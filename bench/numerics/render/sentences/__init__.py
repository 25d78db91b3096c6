"""The Answer's sentences, in its order: `dtypes`, `scaler` (with `divergence`), `bf16`,
`modes`."""
