"""Verdicts: each rule that turns measurements into a claim, in one place, pandas only (no torch).

- `timing`: what a timing run's rows can carry: which recipe is fastest (or which are tied within
  noise), when GradScaler's cost may be printed, and that a float8 recipe converting no Linear is
  `unsupported`.

May import: `bench.store` and the mode table (`bench.recipes.catalog`, which needs no torch);
pandas, no torch. The case-level checks (`bench.execution`) and publishing (`bench.publish`) both
ask a verdict here rather than restate its rule."""
