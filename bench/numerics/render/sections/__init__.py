"""report.md's measured sections, in the report's order: `dtypes` (the audit), `underflow` (the
census and the histogram), `training` (convergence and divergence), `recipes` (beyond autocast).
`bench.numerics.render.report` puts them together."""
