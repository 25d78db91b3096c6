"""The numerics study: which dtype every tensor of the train step has, how much of each gradient
float16 flushes with and without GradScaler, and whether training converges without it; its
folder's files are listed in docs/numerics.md. Sub-packages, bottom up (each may import those
before it): `measure` (runs it; a job's, `bench.numerics.job`), `analysis`, `render` (no torch)."""
