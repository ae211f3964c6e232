#!/usr/bin/python3
"""The API server restarted 5 times and etcd 3 times, at random moments, while 200 jobs x 8 pods are created, fail
and finish, the operator running throughout: afterwards every job has exactly its pods and every status count
equals what happened (burst.py says how).

usage: api_server_and_etcd_restarted_during_a_burst_lose_and_duplicate_nothing.py OPERATOR_BINARY [burst.py's options]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import burst  # noqa: E402

if __name__ == "__main__":
    sys.exit(burst.main(__doc__ + "\n" + burst.__doc__, apiserver_restarts=5, etcd_restarts=3, window=150))
