"""What a study's tables show, without torch and without measuring: `summary` (summary.csv, one
row per convergence run, and the divergence rule; a study's job writes it, the report reads the
same rule back), `runs` (what the summary and traces show: the loss gap to the reference, runs that
learned, the mechanism of a divergence) and `failures` (what of a study failed, as the report and
the command's exit status say it).

May import: `bench.numerics.measure`'s torch-free modules (`tables`), `bench.recipes.catalog`, and
below. Never `bench.numerics.render`."""
