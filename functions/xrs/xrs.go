// Package xrs defines the composite resources the composition functions take: the compact inventory of the
// whole cluster (for flavors) and one pool with what it needs to see (for instancetype). The embedded composer
// builds them in memory; under Crossplane they are real composite resources defined in compositions/.
package xrs

import (
	"sort"
	"time"

	"github.com/crossplane/function-sdk-go/resource/composed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
)

// The composite resources' API group and version.
const (
	Group      = "pools.gpustack.ai"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version

	// KindNodeInventory is the composite of the flavors function.
	KindNodeInventory = "XNodeInventory"
	// KindInstanceTypePool is the composite of the instancetype function.
	KindInstanceTypePool = "XInstanceTypePool"
)

// FunctionSettings are the settings the functions read.
type FunctionSettings struct {
	// MixedOnNode is instance-type-mixed-on-node.
	MixedOnNode bool `json:"mixedOnNode"`
	// AwareCPUManufacturer is instance-type-aware-cpu-manufacturer.
	AwareCPUManufacturer bool `json:"awareCPUManufacturer"`
	// DerivedFromNode is instance-type-derived-from-node.
	DerivedFromNode bool `json:"derivedFromNode"`
	// NodeDevicesCheckActive is true once the gpustack-node-devices AdmissionCheck is Active.
	NodeDevicesCheckActive bool `json:"nodeDevicesCheckActive,omitempty"`
	// DrainWhenNoFlavors is instance-type-drain-when-no-flavors.
	DrainWhenNoFlavors bool `json:"drainWhenNoFlavors,omitempty"`
	// DrainGracePeriod is instance-type-drain-grace-period.
	DrainGracePeriod metav1.Duration `json:"drainGracePeriod,omitempty"`
}

// DefaultFunctionSettings are the settings' built-in defaults.
func DefaultFunctionSettings() FunctionSettings {
	return FunctionSettings{MixedOnNode: true, DerivedFromNode: true, DrainWhenNoFlavors: true,
		DrainGracePeriod: metav1.Duration{Duration: 5 * time.Minute}}
}

// NodeInventorySpec is the flavors function's input.
type NodeInventorySpec struct {
	// Classes are the cluster's nodes, managed or not, grouped by identity (no ledgers).
	Classes []pools.NodeClass `json:"classes"`
	// Settings are the settings in effect.
	Settings FunctionSettings `json:"settings"`
}

// Inventory returns the flavors function's input for the nodes: their identities (no ledgers), grouped into
// classes.
func Inventory(nodes []pools.Node, s FunctionSettings) NodeInventorySpec {
	ids := make([]pools.Node, len(nodes))
	for i, n := range nodes {
		ids[i] = n.Identity()
	}
	return NodeInventorySpec{Classes: pools.Classify(ids), Settings: s}
}

// NodeInventoryStatus is what the flavors function reports back on its composite.
type NodeInventoryStatus struct {
	// Flavors are the ResourceFlavors, in the compact form the instancetype function takes.
	Flavors []pools.Flavor `json:"flavors"`
	// Catalog are the catalog entries.
	Catalog []pools.CatalogEntry `json:"catalog"`
}

// InstanceTypePoolSpec is the instancetype function's input: one InstanceType and what its pool covers.
type InstanceTypePoolSpec struct {
	// Name is the InstanceType's name.
	Name string `json:"name"`
	// Generation is the InstanceType's generation.
	Generation int64 `json:"generation,omitempty"`
	// Labels are the InstanceType's labels.
	Labels map[string]string `json:"labels,omitempty"`
	// Deleting is true once the InstanceType is being deleted.
	Deleting bool `json:"deleting,omitempty"`
	// ReservingWorkloads is how many Workloads the pool's ClusterQueue still reserves quota for, from its
	// status: a draining queue is Draining while any are left, Inactive after.
	ReservingWorkloads int32 `json:"reservingWorkloads,omitempty"`
	// QueueStarted is whether the pool's ClusterQueue has started: it exists and is not on the empty-plan hold
	// (it had resource groups once, or was made before that hold). A queue that has not started is held, marked
	// topology.gpustack.ai/empty-plan-hold, until a flavor fills its groups; one that has started and loses its
	// flavors is not (the walkthrough's A10G pool reads Active with none), the drain settings deciding instead.
	QueueStarted bool `json:"queueStarted,omitempty"`
	// NoFlavorsSince is the InstanceType's status.noFlavorsSince as it stands: when the pool was first seen
	// with no flavor left.
	NoFlavorsSince *metav1.Time `json:"noFlavorsSince,omitempty"`
	// Now is the time of this composition, which the drain grace period is measured to. The function reads no
	// clock, so its output is the same for the same input.
	Now metav1.Time `json:"now,omitempty"`
	// Type is the InstanceType's spec.
	Type workerv1.InstanceTypeSpec `json:"type"`
	// Flavors are the ResourceFlavors of the pool (others are ignored).
	Flavors []pools.Flavor `json:"flavors"`
	// Nodes are the nodes of the pool's flavors with what the views read of them (see pools.Node.ForPool),
	// grouped into classes.
	Nodes []pools.NodeClass `json:"nodes"`
	// Namespaces are the namespaces that get an entrance LocalQueue.
	Namespaces []string `json:"namespaces"`
	// Settings are the settings in effect.
	Settings FunctionSettings `json:"settings"`
}

// SortedNames returns the resource names of a function's composed objects, sorted, the order responses list them.
func SortedNames(objects map[string]runtime.Object) []string {
	names := make([]string, 0, len(objects))
	for n := range objects {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Composed converts a typed object into a desired composed resource, without its status: a composed object's
// status belongs to its own controller (Kueue's), and a typed zero status would read as drift until that
// controller writes one.
func Composed(o runtime.Object) (*composed.Unstructured, error) {
	cd, err := composed.From(o)
	if err != nil {
		return nil, err
	}
	delete(cd.Object, "status")
	return cd, nil
}

// The functions convert typed objects with composed.From, which needs their kinds in composed.Scheme.
func init() {
	utilruntime.Must(kueuev1beta2.AddToScheme(composed.Scheme))
	utilruntime.Must(workerv1.AddToScheme(composed.Scheme))
}
