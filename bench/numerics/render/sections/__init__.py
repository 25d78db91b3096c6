"""report.md's measured sections, in order: `dtypes`, `underflow`, `training`, `modes`."""
