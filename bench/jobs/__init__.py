"""Jobs: what a command runs, from its config expanded into plans once at the entry to a finished
folder (`session`, `maxbatch`, `ab`, `record`), or run folders copied into results/ (`promote`);
rendering is the command's next step, never the job's. May import: `bench.measure` and below,
`bench.store`. Never `bench.publish`."""
