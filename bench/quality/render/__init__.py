"""The time-to-quality study's report, without torch: report.md and its verdicts (`report`), its
curves (`plot`), how its runs and seeds were made (`runs`), `--replicate`'s page (`replicate`)."""
