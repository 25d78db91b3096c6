"""The study's measuring: its settings (`config`, with the torch-free `defaults` the command line
reads), its units of work over the GPUs (`jobs`), the dtype audit (`audit`, with `grads`: the
dtypes of every gradient and the autograd chain), the trajectories (`training`), the underflow
census (`underflow`, against float16's range in `fp16`), and the tables they write (`tables`:
files, columns, reading a folder back; torch-free, as `fp16` and `defaults` are).

May import: `bench.recipes`, `bench.execution`, `bench.measure`, `bench.workloads` and below.
Never `bench.numerics.analysis` or `bench.numerics.render`, at any depth: measuring writes tables,
the study's reading comes after (tests/test_layout.py)."""
