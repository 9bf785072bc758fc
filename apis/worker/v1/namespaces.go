package v1

import "slices"

// The system namespaces: the cluster's own and those the product's chart installs into. Every admission rule,
// webhook and Kueue's configuration leaves them alone, so the product's own Pods start while no worker or Kueue
// answers yet (as at install) and no user rule judges them. The copies in other languages (the CEL and Rego
// policies, the chart's webhook selector) are written from SystemNamespaces by make generate
// (hack/systemnamespaces), and make verify fails when one of them is edited by hand.
const (
	// DeviceManagerNamespace is where the device managers run. They are the operator's one privileged part, so
	// they have a namespace of their own whose Pod Security label admits privileged Pods, while SystemNamespace
	// stays restricted.
	DeviceManagerNamespace = "gpustack-device-manager"
	// NodeFeatureDiscoveryNamespace is the bundled NFD's namespace.
	NodeFeatureDiscoveryNamespace = "node-feature-discovery"
	// StorageNamespace is the optional local volume provisioner's namespace.
	StorageNamespace = "gpustack-storage"
	// KueueNamespace is the namespace of a Kueue the chart does not install (the chart's kueueNamespace
	// default); the chart's own Kueue runs in SystemNamespace.
	KueueNamespace = "kueue-system"
)

// KubernetesNamespaces are the cluster's own namespaces, which no component of the product writes in.
var KubernetesNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// SystemNamespaces returns the system namespaces: Kubernetes' own, then the product's, in a fixed order.
func SystemNamespaces() []string {
	return append(slices.Clone(KubernetesNamespaces), SystemNamespace, DeviceManagerNamespace,
		NodeFeatureDiscoveryNamespace, StorageNamespace, KueueNamespace)
}

// systemNamespaces is SystemNamespaces, made once: IsSystemNamespace answers for every Pod admitted.
var systemNamespaces = SystemNamespaces()

// IsSystemNamespace reports whether name is one of SystemNamespaces.
func IsSystemNamespace(name string) bool {
	return slices.Contains(systemNamespaces, name)
}
