"""A finished study rendered from its folder alone (no torch): `study`, `report` (with
`sections`), `answer` (with `sentences`), `markdown` and `plots`. May import the torch-free
`bench.numerics.measure` modules, `bench.numerics.analysis`, `bench.ground.catalog`,
`bench.text.tables`, `bench.text.figures` and below."""
