//go:build tools

// Package tools pins Kubeflow's Training Operator v1, which tests/bench/operator runs beside kubedist.
package tools

import (
	_ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
)
