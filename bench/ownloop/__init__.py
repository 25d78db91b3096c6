"""Measuring inside a user's own training loop (docs/own-loop.md): the probe, its marks, census
and folder, the callbacks for transformers and Lightning (optional); and the `sweep` study of a
user's script in the studies' one shape: `config`, the verdicts over its looks (`looks`), its job
(`job`, `next_look`, `script`) and its report (`render`)."""
