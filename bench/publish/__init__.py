"""Publishing: what reads results folders and writes what people read (reports, the index, README
blocks, comparisons, history, the site); deciding and acting are below it (`bench.verdicts`,
`bench.jobs`), cells and figures are `bench.text`'s. No torch (tests/test_publish_imports.py);
markdown and plotly only in `site` (the `site` extra)."""
