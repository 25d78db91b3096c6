"""Measuring inside a user's own training loop (docs/own-loop.md): the probe a plain loop holds
(`probe.py`), the contract with the driver (`contract.py`: the recipe and seed it asks for, and
the recipe the run shows), its step marks read lazily (`marks.py`), the underflow census of the
user's real gradients (`census.py`), the run folder it writes (`folder.py`), and the callbacks
that drive it from transformers' Trainer and Lightning (`hf.py`, `lightning.py`; both packages
optional, imported only there).

It reuses the project's measuring (the clocks of `bench.measure.timing`, the statistics of
`bench.measure.stats`, FlopCounterMode's formulas of `bench.measure.flops`, the ceilings of
`bench.measure.ceilings`, the census of `bench.numerics.measure.underflow`) and writes a timing
folder (`bench.store`) that `report`, `compare` and `publish` read as any other.
"""
