"""The defaults of a timing verdict, beside the statistics that use them: importable without
numpy, pandas or torch, because `--help` shows them before anything heavy is imported."""

MIN_EFFECT = 0.02
"""The smallest relative change a timing verdict calls faster or slower, unless told otherwise
(`--min-effect`): a change below it is not worth a verdict, however sure."""
CONFIDENCE = 0.95
"""The confidence of a timing verdict's interval, unless told otherwise (`--confidence`); 1 minus
it is the level of its test."""
