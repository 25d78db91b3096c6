"""The study's measuring: settings and jobs (`config`), the dtype audit (`audit`, `grads`), the
trajectories (`training`), the underflow census (`underflow`, `fp16`) and the tables (`tables`).
May import `bench.plan`, `bench.execution`, `bench.measure` and below; never
`bench.numerics.analysis` or `.render` (tests/test_layout.py)."""
