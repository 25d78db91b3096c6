"""The defaults of a timing verdict, beside the statistics that use them: importable without
numpy, pandas or torch, because `--help` shows them before anything heavy is imported."""

MIN_EFFECT = 0.02
"""The smallest relative change a timing verdict calls faster or slower, unless told otherwise
(`--min-effect`): a change below it is not worth a verdict, however sure."""
CONFIDENCE = 0.95
"""The confidence of a timing verdict's interval, unless told otherwise (`--confidence`); 1 minus
it is the chance of any false `faster` or `slower` call that a comparison allows itself."""
MIN_ROUNDS = 2
"""Rounds a side below which a case is `too_few` to judge (`bench.verdicts.rounds`): one round
shows nothing of its spread. From two a side on the t-test on the means holds its error rate
(a case's spread is moderated across the cases only from `rounds.PRIOR_ROUNDS` on), and a large
change is called from so few: a 1.7x one at 3% between rounds (tests/test_verdicts_rounds.py)."""
PRIOR_ROUNDS = 5
"""Rounds a side a case needs before its spread is moderated across its mode's cases (and lends
to their prior), and `ab`'s first look: below it each variance has so few degrees of freedom
that the prior's, fitted from their scatter, are overstated and a family makes more false calls
than it allows (results/sessions/speed_rule_sim.txt); such a case is judged on its own spread."""
