# Pinned versions of the upstream tools the local control plane and the tests use.
# The tools/*/go.mod files pin the same versions; tools.sh checks that they agree.
KUBERNETES_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
HELM_VERSION=v4.3.2
REGISTRY_VERSION=v3.1.2
# Real nodes (KUBEDIST_REAL_NODES): the container runtime and the cluster DNS.
CONTAINERD_VERSION=v2.3.7
COREDNS_VERSION=v1.14.7
# Kueue, the job queueing controller that admits TrainingJobs by quota (operator.cluster.kueue runs it).
KUEUE_VERSION=v0.17.0
# Benchmarks only (tools.sh bench): Kubeflow's Training Operator v1, run beside kubedist by tests/bench/operator.
KUBEFLOW_TRAINING_OPERATOR_VERSION=v1.9.3
