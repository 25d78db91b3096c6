"""Measuring: the one timing function (`timing`), statistics of raw samples (`stats`), peak
memory (`memory`), the GPU's own ceilings (`ceilings`), the floor they give a step (`roofline`),
the machine's description (`env`), and the runner that turns a case into a row (`runner`, and
`ranks` for a case run on several ranks).

May import: `bench.execution` and below, `bench.store` (rows are appended to a folder as each
case ends). Never `bench.publish`: measuring writes rows, publishing reads them."""
