#!/usr/bin/python3
"""Two replicas; the leader's API traffic dropped 80% while jobs are scaled: the audit log shows no moment in which
both replicas write, the standby takes over (failover time), and every job ends with the pods last asked for
(partition.py says how).

usage: a_partitioned_leader_stops_writing_before_its_standby_takes_over.py OPERATOR_BINARY [partition.py's options]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import partition  # noqa: E402

if __name__ == "__main__":
    sys.exit(partition.main(__doc__ + "\n" + partition.__doc__))
