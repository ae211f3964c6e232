"""A tiny DNS responder for the resolver test: A records from a file, NXDOMAIN for anything else.

usage: dns_responder.py ADDR PORT RECORDS_FILE QUERY_LOG
RECORDS_FILE holds "name ipv4" lines and is re-read for every query (a test adds a name while the launcher
retries); every queried name is appended to QUERY_LOG. Once bound it writes QUERY_LOG.ready.
"""
import socket
import struct
import sys

addr, port, records_file, query_log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((addr, port))
open(query_log + ".ready", "w").close()


def records():
    try:
        with open(records_file) as f:
            return dict(line.split() for line in f if line.strip())
    except FileNotFoundError:
        return {}


while True:
    query, peer = sock.recvfrom(1500)
    qid, flags, qd = struct.unpack("!HHH", query[:6])
    labels, pos = [], 12
    while query[pos]:
        labels.append(query[pos + 1:pos + 1 + query[pos]].decode())
        pos += 1 + query[pos]
    question = query[12:pos + 5]
    name = ".".join(labels).lower()
    with open(query_log, "a") as f:
        f.write(name + "\n")
    ip = records().get(name)
    if ip:
        answer = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 5, 4) + socket.inet_aton(ip)
        reply = struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + answer
    else:
        reply = struct.pack("!HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question
    sock.sendto(reply, peer)
