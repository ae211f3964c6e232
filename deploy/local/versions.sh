# Pinned versions of the upstream tools the local control plane and the tests use.
# The tools/*/go.mod files pin the same versions; tools.sh checks that they agree.
# Kubernetes: the control plane, the real nodes' kubelet and kube-proxy, and kubectl (module tools/kubernetes).
KUBERNETES_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
# Helm 4.3 is built with Kubernetes 1.37's client libraries.
HELM_VERSION=v4.3.2
REGISTRY_VERSION=v3.1.2
# Real nodes (KUBEDIST_REAL_NODES): the container runtime and the cluster DNS (both built with 1.37's libraries).
CONTAINERD_VERSION=v2.4.2
COREDNS_VERSION=v1.15.0
# Kueue, the job queueing controller that admits TrainingJobs by quota (operator.cluster.kueue runs it). 0.19 is the
# newest release the module proxy serves; it is built with Kubernetes 1.36's libraries, and Kueue supports the
# three Kubernetes releases before it (1.34 to 1.36) and runs on the next (the matrix runs it on 1.34 to 1.37).
KUEUE_VERSION=v0.19.2
# Benchmarks only (tools.sh bench): Kubeflow's Training Operator v1, run beside kubedist by tests/bench/operator.
KUBEFLOW_TRAINING_OPERATOR_VERSION=v1.9.3
# The version matrix only (tools.sh matrix; ctest -L matrix): the control planes it runs the core scenarios
# against, the oldest first; each but KUBERNETES_VERSION from its own module, tools/kubernetes-1.MINOR.
KUBERNETES_MATRIX_VERSIONS="v1.34.4 v1.35.4 v1.36.3 v1.37.2"
