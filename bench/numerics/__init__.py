"""The numerics study: which dtype every tensor of the train step has, how much of each gradient
float16 flushes to zero with and without GradScaler, and whether training converges without it.

A study writes one folder, `results/<UTC stamp>_<gpu>_<sha>_numerics[_<tag>]/`:
- `audit.csv` (tensor x mode dtypes), `audit_ops.csv` (every aten op with its dtypes),
  `audit.json` (the autograd chain to the first Linear's weight per mode, and the GradScaler
  error paths);
- `census.csv`: underflow of every gradient tensor against an fp32 reference, per batch size,
  mode and checkpoint of an fp16 + GradScaler training trajectory;
- `histogram.csv`, `fp16_fate.csv`, `histogram.png`: the Micikevicius et al. histogram;
- `convergence_steps.csv` (every step's loss and scale), `convergence_evals.csv` (held-out),
  `convergence_runs.csv` (measured step time per run), `summary.csv`, `loss_curves.png`,
  `scale.png`;
- `convergence_traces.npz` (per parameter, every `--trace-every` steps: the mechanism of a
  divergence), `traces.png`;
- `failed.csv` (jobs that raised), `env.json`, and `report.md`, which ends with the computed Answer.

The tables that run to MBs for a transformer are compressed: `audit_ops`, `census` and
`convergence_steps` as `<file>.csv.gz` (pandas reads them as they are), the traces as `.npz`
(`bench.store.frames`); `tables.FORMS` says which, and older folders' plain files still read.

Three sub-packages, by role, from the bottom up (each may import those before it):
- `measure`: the study's measuring, in the order a study runs it: `config` (the settings,
  validated; `defaults`), `audit` and `grads` (dtypes), `jobs` (units of work over the GPUs),
  `training` (the trajectories), `underflow` (the census, with `fp16`); and `tables` (the files
  and their columns, without torch). Running a study is a job (`bench.jobs.numerics`).
- `analysis`, without torch: `summary` (summary.csv, one row per run, and the divergence rule),
  `runs` (what the summary and traces show), `failures` (what of a study failed).
- `render`, without torch, from a finished folder: `study` (a folder's figures and report.md),
  `report` (report.md, by section: `sections`), `answer` (the Answer, by section: `sentences`),
  `markdown` (the tables' cells) and `plots`.
Measuring never imports rendering (tests/test_layout.py); modes are asked of
`bench.recipes.catalog`, never named.

Nothing of the study runs inside a timed region of the core harness.
"""
