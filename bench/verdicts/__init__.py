"""Verdicts: each rule that turns measurements into a claim, in one place (docs/criteria.md,
docs/comparing.md, docs/quality.md). The case-level checks, the studies and publishing ask a
verdict here rather than restate its rule. May import: `bench.store` and the mode table
(`bench.modes.catalog`); pandas (not in `rounds`, `power`, `float8_plan`) and scipy, no torch."""
