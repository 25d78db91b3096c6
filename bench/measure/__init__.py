"""Measuring: the one timing function (`timing`), statistics of raw samples (`stats`), peak
memory (`memory`), the GPU's ceilings and the floor they give a step (`ceilings`, `roofline`),
the machine (`env`), and the runner that turns a case into a row (`runner`, `ranks`). May import
`bench.execution` and below and `bench.store`; never `bench.publish`."""
