//go:build tools

// Package tools pins the commands this module builds: nfd-master, and nfd-worker and nfd-gc for the image the
// real nodes run NFD's chart from.
package tools

import (
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-gc"
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-master"
	_ "sigs.k8s.io/node-feature-discovery/cmd/nfd-worker"
)
