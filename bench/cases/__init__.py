"""The case and its axes: `Case` (one point of the grid, every axis a field, validated once),
the grid of a timing run (`grid`: `RunConfig`, the index's grid line), the settings of a
largest-batch search (`maxbatch`), the one set of validators (`checks`), case ids, and the names
of every registry's rows without torch (`choices`), which the command line offers.

May import: `bench.faults` and the torch-free mode table (`bench.recipes.catalog`) at module
level; the registries a case is built from (torch) are imported where a case is built. Imported
by everything that makes or reads a case."""
