"""Publishing: everything that reads results folders and writes what people read (reports, the
index, README blocks, comparisons, history, the site); what decides or acts is below it
(`bench.verdicts`, `bench.jobs`), and the cells and figures it writes are `bench.text`'s. No torch:
publishing works from folders alone (tests/test_publish_imports.py); markdown and plotly only in
`site` (the `site` extra)."""
