"""The defaults of a timing verdict, beside the statistics that use them: importable without
numpy, pandas or torch, because `--help` shows them before anything heavy is imported."""

MIN_EFFECT = 0.02
"""The smallest relative change a timing verdict calls faster or slower, unless told otherwise
(`--min-effect`): a change below it is not worth a verdict, however sure."""
CONFIDENCE = 0.95
"""The confidence of a timing verdict's interval, unless told otherwise (`--confidence`); 1 minus
it is the chance of any false `faster` or `slower` call that a comparison allows itself."""
MIN_ROUNDS = 5
"""Rounds a side below which a case is `too_few` to judge (`bench.verdicts.rounds`). One round
shows nothing of its spread; on rounds bootstrapped from the H200 default grid
(results/grid-power/), 3 and 4 a side made false calls in more comparisons than the family
allows, 5 and more did not."""
