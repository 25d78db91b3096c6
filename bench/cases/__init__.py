"""The case and its axes: `Case` (one point of the grid, every axis a field, validated once),
the grid of a timing run, case ids, and the names of every registry's rows without torch
(`choices`), which the command line offers.

May import: `bench.faults` only at module level (the registries it checks names against are
imported where a case is built). Imported by everything that makes or reads a case."""
