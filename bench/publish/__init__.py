"""Publishing: everything that reads results folders and writes what people read. Reports
(`report`, `findings`, `maxbatch`), tables (`tables`: the one cell formatter), plots (`plots`;
each mode's colour is its card's), the index of results/ (`index`), the README's generated blocks
(`readme`, `summary`), other tools' formats (`export`), comparisons across runs (`compare`,
`history`), a user's criteria (`criteria`) and publishing runs into results/ (`promote`).

May import: `bench.store`, `bench.cases`, `bench.faults`, `bench.numerics`' reading modules;
pandas, tabulate, matplotlib, scipy. No torch: publishing works from folders alone."""
