"""Measuring inside a user's own training loop (docs/own-loop.md): the probe, its contract with
the driver, its marks, the gradient census, the run folder it writes, and the callbacks for
transformers' Trainer and Lightning (`hf.py`, `lightning.py`; both optional, imported there). The
`sweep` study of a user's script has the studies' one shape here: `config`, the verdicts over its
looks (`looks`), its job (`job`, `next_look`, `script`) and its report (`render`)."""
