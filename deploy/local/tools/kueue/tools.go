//go:build tools

// Package tools pins Kueue, the job queueing controller the Kueue tests (operator.cluster.kueue) run against.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
