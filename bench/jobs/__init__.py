"""Jobs: what a command runs from its config to a finished folder. `session` (a timing run),
`maxbatch` (the largest batch each mode trains); `configs` builds a new job's config from the
user's options, where the registries fill in its defaults; `plans` resolves each case into its
plan of objects, once, for everything below. Each job opens or resumes its folder
through `bench.store.folders`, locks it, measures, and records its end; rendering is the
command's next step (`bench.publish`), never the job's.

May import: `bench.measure` and below, `bench.store`. Never `bench.publish`."""
