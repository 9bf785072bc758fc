//go:build tools

// Package tools pins the command this module builds: Rancher's local-path-provisioner, the storage the chart
// installs when storage.enabled, for the image the real nodes run.
package tools

import (
	_ "github.com/rancher/local-path-provisioner"
)
