"""The store: results folders on disk: `paths`, `results` (a folder's files, read back into one
DataFrame), `folders` (naming, creating, locking, reopening), `schema` (older layouts). May
import `bench.cases`, `bench.faults` and `bench.ground`; pandas, no torch at module level."""
