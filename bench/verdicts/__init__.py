"""Verdicts: each rule that turns measurements into a claim, in one place, pandas only (no
torch)."""
