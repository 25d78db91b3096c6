"""The store: results folders on disk. `paths` (where the project and its folders are),
`results` (the files of a folder, reading them back into one DataFrame), `folders` (naming,
creating, locking and reopening one).

May import: `bench.cases`, `bench.faults` and the mode table (`bench.recipes.catalog`, which
needs no torch); pandas, no torch at module level."""
