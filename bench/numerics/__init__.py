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

Modules, in the order a study runs them: `config` (the settings, validated), `study` (a folder:
start, resume, render), `audit` and `grads` (dtypes), `jobs` (units of work over the GPUs),
`training` and `task` (the trajectories), `underflow` (the census); and, without torch, `tables`
(the files and their columns), `run_summary` (summary.csv, one row per run), `fp16`.

Publishing, without torch, from a finished folder: `analysis` (what the summary and traces show),
`answer` (the Answer, by section: `answer_dtypes`, `answer_scaler`, `answer_divergence`,
`answer_bf16`, `answer_recipes`), `report` (report.md, by section: `report_dtypes`,
`report_underflow`, `report_training`, `report_recipes`, with `report_format`) and `plots`.
Measuring never imports publishing; modes are asked of `bench.recipes.catalog`, never named.

Nothing of the study runs inside a timed region of the core harness.
"""
