#!/usr/bin/python3
"""100 jobs of 8 nodes plus 2 spares each: 20 pods lost and 20 failed at random moments, members and spares alike,
and the operator SIGKILLed 5 times: afterwards every job again has its 2 spares, 0 duplicate pods or ranks, and the
counts are exact (a spare's failure or loss is no restart; burst.py says how it is checked).

On kwok no launcher runs, so no spare stands in here: this is the operator's side at scale (operator.cluster.spares
and real.faults.powerloss_spare show a spare taking a place).

usage: spares_failed_or_lost_during_a_burst_are_made_again_without_duplicates.py OPERATOR_BINARY [burst.py's options]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import burst  # noqa: E402

if __name__ == "__main__":
    sys.exit(burst.main(__doc__ + "\n" + burst.__doc__, jobs=100, spares=2, losses=20, failures=20, operator_kills=5))
