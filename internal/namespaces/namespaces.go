// Package namespaces is the one list of the system namespaces: the cluster's own and those the product's chart
// installs into. Every admission rule, webhook and Kueue's configuration leaves them alone, so the product's own
// Pods start while no worker or Kueue answers yet (as at install) and no user rule judges them. The copies in
// other languages (the CEL and Rego policies, the chart's webhook selector) are written from System by
// make generate (hack/systemnamespaces), and make verify fails when one of them is edited by hand.
package namespaces

import (
	"slices"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// The namespaces the chart installs into by default.
const (
	// Operator is the worker's namespace (and Kueue's, when the chart installs it).
	Operator = workerv1.SystemNamespace
	// DeviceManager is the device agents' namespace.
	DeviceManager = "gpustack-device-manager"
	// NodeFeatureDiscovery is the bundled NFD's namespace.
	NodeFeatureDiscovery = "node-feature-discovery"
	// Storage is the optional local volume provisioner's namespace.
	Storage = "gpustack-storage"
	// Kueue is the namespace of a Kueue the chart does not install (the chart's kueueNamespace default).
	Kueue = "kueue-system"
)

// Kubernetes are the cluster's own namespaces, which no component of the product writes in.
var Kubernetes = []string{"kube-system", "kube-public", "kube-node-lease"}

// System returns the system namespaces: Kubernetes' own, then the product's, in a fixed order.
func System() []string {
	return append(append([]string{}, Kubernetes...), Operator, DeviceManager, NodeFeatureDiscovery, Storage, Kueue)
}

// IsSystem reports whether name is one of the system namespaces.
func IsSystem(name string) bool {
	return slices.Contains(System(), name)
}
