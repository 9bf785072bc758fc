//go:build tools

// Package tools pins the commands this module builds: nfd-master, and nfd-worker for the real nodes' image.
package tools

import (
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-master"
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-worker"
)
