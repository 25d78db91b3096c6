"""The timing verdicts' defaults, defined with the statistics that use them."""

MIN_EFFECT = 0.02
"""The smallest relative change a timing verdict calls faster or slower, unless told otherwise
(`--min-effect`): a change below it is not worth a verdict, however sure."""
CONFIDENCE = 0.95
"""The confidence of a timing verdict's interval, unless told otherwise (`--confidence`); 1 minus
it is the chance of any false `faster` or `slower` call that a comparison allows itself."""
