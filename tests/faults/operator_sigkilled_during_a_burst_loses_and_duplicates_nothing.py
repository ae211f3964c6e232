#!/usr/bin/python3
"""The operator SIGKILLed at random moments (20 by default) while 200 jobs x 8 pods are created, fail and finish:
afterwards every job has exactly its pods and every status count equals what happened (burst.py says how).

usage: operator_sigkilled_during_a_burst_loses_and_duplicates_nothing.py OPERATOR_BINARY [burst.py's options]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import burst  # noqa: E402

if __name__ == "__main__":
    sys.exit(burst.main(__doc__ + "\n" + burst.__doc__, operator_kills=20))
