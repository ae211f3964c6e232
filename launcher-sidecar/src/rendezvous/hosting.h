// HostingPlan: who hosts the rendezvous, decided from the configuration and where the endpoint's address is (pure).
#pragma once

#include <string>

#include "cli/launch_config.h"

namespace kubedist::launcher {

struct HostingPlan {
  bool host = false;          // this launcher runs the rendezvous service (single node: in-process, no socket)
  bool listen = false;        // ... and opens the endpoint's port to the other nodes (multi-node)
  std::string bind_address;   // where to listen: "" for every address
  bool must_bind = false;     // a port that cannot be bound is fatal (node rank 0 was given); else this launcher
                              // joins the one that holds it
  // Where each round names the workers' store (on a port free on this host, chosen anew each round, as torchrun's
  // c10d rendezvous does); "": nowhere, the launchers' --master-addr/--master-port (or their defaults) hold.
  std::string store_address;
  // The node rank that orders this launcher in each round, also when it finds the port taken and joins instead.
  // Given ranks stay. Without one, a launcher on the endpoint's host is 0 even when another launcher holds the port
  // (another of this job, or of another job on the same endpoint): the store each round names is on this host, so
  // one of its launchers must be group rank 0; a launcher elsewhere is 1 (the round assigns GROUP_RANK; this only
  // orders it).
  int node_rank = 0;
};

// True when the plan depends on whether the endpoint's address is this host's: torchrun's c10d style, a multi-node
// job whose command names no node rank (the same command on every node), or a single-node job given an endpoint.
bool hosting_depends_on_endpoint(const LaunchConfig& config);

// Node rank 0 hosts. Without a node rank, the launcher on the endpoint's host does (of several there, the first to
// bind the port); endpoint_is_local is read only when hosting_depends_on_endpoint(). It listens on the endpoint's
// own address when that is a loopback one (tests, several "nodes" on one machine), else on every address. A host
// that listens names the store at the endpoint's address; so does a single node given an endpoint (c10d style),
// whose workers would otherwise all take 29500 and collide with any other such job on the host (or 127.0.0.1 when
// the endpoint is not this host's: this node's workers are the whole group).
HostingPlan plan_hosting(const LaunchConfig& config, bool endpoint_is_local);

}  // namespace kubedist::launcher
