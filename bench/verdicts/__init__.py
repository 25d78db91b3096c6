"""Verdicts: each rule that turns measurements into a claim, in one place (docs/criteria.md,
comparing.md, quality.md), exit statuses (`gates`, `criteria_file`, `criteria`) and the rounds
judge's power study (`power`, `grid_power`) among them. May import: `bench.store`, `bench.ground`,
`bench.text`, `bench.plan.float8_plan`; pandas (not in `rounds`, `power`), scipy; no torch."""
