"""Verdicts: each rule that turns measurements into a claim, in one place (docs/criteria.md,
docs/comparing.md, docs/quality.md). The case-level checks, the studies and publishing ask a
verdict here rather than restate its rule; what decides a command's exit status is here too
(`gates`, a criteria file's checks: `criteria_file`, `criteria`), and the rounds judge's power
study (`power`, `grid_power`). May import: `bench.store`, `bench.ground`, `bench.text` (a cell as
every table writes it) and `bench.plan.float8_plan`; pandas (not in `rounds`, `power`) and
scipy, no torch."""
