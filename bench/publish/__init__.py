"""Publishing: everything that reads results folders and writes what people read (reports, the
index, README blocks, comparisons, history, the site). No torch: publishing works from folders
alone (tests/test_publish_imports.py); markdown and plotly only in `site` (the `site` extra)."""
