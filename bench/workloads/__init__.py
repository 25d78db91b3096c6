"""The models a case trains: building one on a device for a named size preset, its synthetic
batch and its loss. `mlp` is the model of the question ampbench began with.

May import: torch, `bench.data`, `bench.store` (a user's paths), `bench.cases` and below."""
