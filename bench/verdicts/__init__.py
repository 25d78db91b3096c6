"""Verdicts: each rule that turns measurements into a claim, in one place, pandas only (no torch).

- `timing`: what a timing run's rows can carry: which recipe is fastest (or which are tied within
  noise), when GradScaler's cost may be printed, and that a float8 recipe converting no Linear is
  `unsupported`.
- `rounds`: the verdict on two sides' rounds, case by case (a t-test on log round statistics,
  its spread moderated across the cases of one mode) and across a comparison's cases (Holm's
  correction, and the sequential looks of `ab`'s stopping rule); `compare`, `ab` and `history`
  all judge there. `power` simulates it on rounds bootstrapped from real ones; `driver` judges
  the `sweep` driver's runs with it, one observation per run.
- `float8_plan`: the float8 rule planning asks, without pandas; `defaults`: the timing verdicts'
  smallest effect and confidence.
- `memory`: whether B uses more peak allocated memory than A, case by case, with one declared
  tolerance (pure Python): `compare`, `ab`, `history` and the pytest-benchmark memory gate ask it.
- `training`: what a time-to-quality study's runs can carry: the quality target, whether a recipe
  trains like fp32 (an equivalence test over seeds), whether float16 needs GradScaler (the share of
  the gradient's norm it keeps), and the fastest recipe to the target; `equivalence`: its test
  (Welch's t, two one-sided) and the seeds it needs. `sequential`: that test over looks at growing
  seed counts, its error rate held by alpha spending; `replication`: whether two studies on disjoint
  seeds contradict each other.

May import: `bench.store` and the mode table (`bench.recipes.catalog`, which needs no torch);
pandas (not in `rounds`, `power`, `float8_plan`, which planning and `ab`'s loop read) and
scipy, no torch. The case-level checks (`bench.execution`), the studies and publishing
(`bench.publish`) ask a verdict here rather than restate its rule."""
