//go:build tools

// Package tools pins the cluster DNS server this module builds for the local cluster's real nodes.
package tools

import (
	_ "github.com/coredns/coredns"
)
