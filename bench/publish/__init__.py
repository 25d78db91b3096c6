"""Publishing: everything that reads results folders and writes what people read.

- A folder's report: `render` (any kind of folder), `report` (a timing run: its sections in
  order and the headline), with `columns` (each table's column catalog), `findings` (the opening
  lines, the harness against a plain loop), `ranks` (several GPUs), `variants` (execution
  variants, the fastest recipe), `method` (how the run was made), `plots` (each mode's colour is
  its card's); `maxbatch` (a largest-batch folder); `tables` (the one cell formatter).
- results/ as a whole: `runs` (its run folders and saves), `index` (results/README.md, with
  `index_cells` for what a row says of each kind of run and `grid_text` for a grid in one line),
  `index_check` (is the committed index fresh), `promote` (publishing a run into it), `history`
  (step time across revisions, judged per case by `history_points` as `compare` judges).
- The README's generated blocks: `readme`, and `summary` with `summary_studies` and `prose`.
- Other tools and the user's own expectations: `export`, `compare` (time; its memory half in
  `compare_memory`), `criteria` with `criteria_file`, and `gates` (a comparison's exit status:
  --fail-on-slower, --fail-on-more-memory, --criteria).
- The results as a static site: the `site` package (`ampbench publish`), pages from the reports
  and history charts that work offline.

Modes are named through the mode table (`bench.recipes.catalog`), never by a literal name.

May import: `bench.store`, `bench.cases`, `bench.faults`, `bench.recipes.catalog` (torch-free),
the numerics study's reading (`bench.numerics.analysis`, `bench.numerics.render`, and the tables
of `bench.numerics.measure.tables`); pandas, tabulate, matplotlib, scipy; markdown and plotly in
`site` only (the `site` extra, imported after `site.deps` checked them). No torch: publishing
works from folders alone (tests/test_publish_imports.py)."""
