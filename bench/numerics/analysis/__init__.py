"""What a study's tables show, without torch: `summary` (summary.csv and the divergence rule),
`runs` (what the summary and traces show), `failures` (what of a study failed). May import the
torch-free `bench.numerics.measure.tables`, `bench.ground.catalog` and below; never `render`."""
