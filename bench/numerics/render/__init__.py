"""A finished study rendered, from its folder alone (no torch): `study` (a folder's figures and
report.md, and whether a folder is a study), `report` (report.md: its head, then `sections` in
order), `answer` (the Answer: `sentences` in order), `markdown` (how both write tables and cells)
and `plots` (the figures).

May import: `bench.numerics.measure`'s torch-free modules (`tables`, `fp16`),
`bench.numerics.analysis`, `bench.recipes.catalog`, `bench.publish.tables` and
`bench.publish.figures` (cells and figures as every report writes them), and below."""
