#include "trainingjob/netpol/render.h"

#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {

nlohmann::json render_job_network_policy(const TrainingJob& job) {
  const nlohmann::json the_job = {{"matchLabels", {{kJobNameLabel, job.name}}}};
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", owned_metadata(job)},
          {"spec",
           {{"podSelector", the_job},
            {"policyTypes", {"Ingress"}},
            {"ingress", {{{"from", {{{"podSelector", the_job}}}}}}}}}};
}

}  // namespace kubedist::trainingjob
