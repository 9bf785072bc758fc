// Package gateway is the worker-gateway: it reads the member clusters named by kubeconfig Secrets and serves,
// read-only, their InstanceTypes and Instances with the cluster each comes from, each InstanceType aggregated
// across the members (docs/multi-cluster.md, Aggregation), and the members' reachability.
package gateway

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
)

// MemberState is what the gateway knows of one member: whether its last read answered, and what the last
// read that answered held (kept while it does not answer, so its types are listed as inactive, not dropped).
type MemberState struct {
	// Name is the member's name, its Secret's.
	Name string
	// Generation is the gateway's generation when what it serves of this member last changed: the same
	// generation, the same served objects. 0 when unknown, as in a state not kept by a Gateway.
	Generation int64
	// Reachable is true when the last read answered.
	Reachable bool
	// Message is the last read's error when it did not answer.
	Message string
	// LastSeen is when it last answered; zero when it never did.
	LastSeen time.Time
	// InstanceTypes, Instances, PersistentVolumes and VolumeTypes are what it held when it last answered.
	InstanceTypes     []workerv1.InstanceType
	Instances         []workerv1.Instance
	PersistentVolumes []workerv1.InstancePersistentVolume
	VolumeTypes       []workerv1.InstancePersistentVolumeType
	// SSHKeys are its InstanceSSHPublicKeys without their keys, PullSecrets its InstanceImagePullSecrets'
	// metadata: the gateway serves their names, never their data.
	SSHKeys     []workerv1.InstanceSSHPublicKey
	PullSecrets []metav1.PartialObjectMetadata
	// ClusterQueues are its Kueue queues, whose quotas the manager's queues sum (Dispatch).
	ClusterQueues []kueue.ClusterQueue
	// Dispatched are the Workloads a manager's MultiKueue made in it, whose waits the manager's Instances tell
	// (MemberReasons).
	Dispatched []kueue.Workload
	// Access is where each Instance a manager dispatched to it is reached there, by the Instance's
	// namespace/name: the note its worker made on the Instance's Service there (workerv1.AnnotationInstanceAccess),
	// which the manager's Pod is given (MemberAccess).
	Access map[string]string
}

// Members returns each member's ClusterMember, sorted by name.
func Members(states []MemberState) []gatewayv1.ClusterMember {
	out := make([]gatewayv1.ClusterMember, 0, len(states))
	for _, s := range sorted(states) {
		m := gatewayv1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: s.Name},
			Status: gatewayv1.ClusterMemberStatus{Reachable: s.Reachable, Message: s.Message, InstanceTypes: len(s.InstanceTypes)}}
		if !s.LastSeen.IsZero() {
			m.Status.LastSeen = &metav1.Time{Time: s.LastSeen}
		}
		out = append(out, m)
	}
	return out
}

// ClusterInstanceTypes returns every member's InstanceTypes, named <cluster>.<type>, sorted by name.
func ClusterInstanceTypes(states []MemberState) []gatewayv1.ClusterInstanceType {
	return perMember(states, func(s *MemberState) []workerv1.InstanceType { return s.InstanceTypes },
		func(cluster string, it *workerv1.InstanceType) gatewayv1.ClusterInstanceType {
			return gatewayv1.ClusterInstanceType{ObjectMeta: metav1.ObjectMeta{Name: cluster + "." + it.Name, Labels: it.Labels},
				Cluster: cluster, Spec: it.Spec, Status: it.Status}
		})
}

// ClusterInstances returns every member's Instances, in their namespaces, named <cluster>.<instance>, sorted
// by namespace and name.
func ClusterInstances(states []MemberState) []gatewayv1.ClusterInstance {
	return perMember(states, func(s *MemberState) []workerv1.Instance { return s.Instances },
		func(cluster string, inst *workerv1.Instance) gatewayv1.ClusterInstance {
			return gatewayv1.ClusterInstance{ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: cluster + "." + inst.Name,
				Labels: inst.Labels}, Cluster: cluster, Spec: inst.Spec, Status: inst.Status}
		})
}

// ClusterInstancePersistentVolumes returns every member's InstancePersistentVolumes, in their namespaces,
// named <cluster>.<volume>, sorted by namespace and name.
func ClusterInstancePersistentVolumes(states []MemberState) []gatewayv1.ClusterInstancePersistentVolume {
	return perMember(states, func(s *MemberState) []workerv1.InstancePersistentVolume { return s.PersistentVolumes },
		func(cluster string, v *workerv1.InstancePersistentVolume) gatewayv1.ClusterInstancePersistentVolume {
			return gatewayv1.ClusterInstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: cluster + "." + v.Name,
				Labels: v.Labels}, Cluster: cluster, Spec: v.Spec, Status: v.Status}
		})
}

// ClusterInstancePersistentVolumeTypes returns every member's InstancePersistentVolumeTypes, named
// <cluster>.<type>, sorted by name.
func ClusterInstancePersistentVolumeTypes(states []MemberState) []gatewayv1.ClusterInstancePersistentVolumeType {
	return perMember(states, func(s *MemberState) []workerv1.InstancePersistentVolumeType { return s.VolumeTypes },
		func(cluster string, t *workerv1.InstancePersistentVolumeType) gatewayv1.ClusterInstancePersistentVolumeType {
			return gatewayv1.ClusterInstancePersistentVolumeType{ObjectMeta: metav1.ObjectMeta{Name: cluster + "." + t.Name, Labels: t.Labels},
				Cluster: cluster, Spec: t.Spec}
		})
}

// ClusterInstanceSSHPublicKeys returns every member's InstanceSSHPublicKeys, in their namespaces, named
// <cluster>.<key>, with their status and without their keys, sorted by namespace and name.
func ClusterInstanceSSHPublicKeys(states []MemberState) []gatewayv1.ClusterInstanceSSHPublicKey {
	return perMember(states, func(s *MemberState) []workerv1.InstanceSSHPublicKey { return s.SSHKeys },
		func(cluster string, k *workerv1.InstanceSSHPublicKey) gatewayv1.ClusterInstanceSSHPublicKey {
			return gatewayv1.ClusterInstanceSSHPublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: cluster + "." + k.Name,
				Labels: k.Labels}, Cluster: cluster, Status: k.Status}
		})
}

// ClusterInstanceImagePullSecrets returns every member's InstanceImagePullSecrets, in their namespaces, named
// <cluster>.<secret>, by their names and labels only, sorted by namespace and name.
func ClusterInstanceImagePullSecrets(states []MemberState) []gatewayv1.ClusterInstanceImagePullSecret {
	return perMember(states, func(s *MemberState) []metav1.PartialObjectMetadata { return s.PullSecrets },
		func(cluster string, p *metav1.PartialObjectMetadata) gatewayv1.ClusterInstanceImagePullSecret {
			return gatewayv1.ClusterInstanceImagePullSecret{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: cluster + "." + p.Name,
				Labels: p.Labels}, Cluster: cluster}
		})
}

// perMember returns view of each of every member's items, sorted by namespace and name (a cluster-scoped
// view has no namespace: by name). The views are large (an Instance's whole spec and status) and there are as
// many as the members hold together: each is built in place once and sorted by its index, never moved around.
func perMember[S any, T any, PT interface {
	*T
	GetNamespace() string
	GetName() string
}](states []MemberState, items func(*MemberState) []S, view func(cluster string, item *S) T) []T {
	n := 0
	for i := range states {
		n += len(items(&states[i]))
	}
	built := make([]T, 0, n)
	for _, s := range sorted(states) {
		list := items(&s)
		for i := range list {
			built = append(built, view(s.Name, &list[i]))
		}
	}
	keys := make([]string, len(built))
	order := make([]int, len(built))
	for i := range built {
		o := PT(&built[i])
		// NUL sorts before every character of a name: a namespace before any it is the prefix of.
		keys[i], order[i] = o.GetNamespace()+"\x00"+o.GetName(), i
	}
	sort.Slice(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	out := make([]T, len(built))
	for i, k := range order {
		out[i] = built[k]
	}
	return out
}

// AggregatedInstanceTypes returns each InstanceType any member has, aggregated over the members that have it
// (pools.Aggregate): a member counts when it answered and its type is Active. Sorted by name.
func AggregatedInstanceTypes(states []MemberState) []gatewayv1.AggregatedInstanceType {
	candidates := map[string][]pools.Candidate{}
	for _, s := range states {
		for _, it := range s.InstanceTypes {
			candidates[it.Name] = append(candidates[it.Name], pools.Candidate{Cluster: s.Name, Accelerated: it.Spec.Acceleratable,
				Active: s.Reachable && it.Status.Phase == workerv1.InstanceTypeActive, Views: viewsOf(&it.Status)})
		}
	}
	names := make([]string, 0, len(candidates))
	for name := range candidates {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]gatewayv1.AggregatedInstanceType, 0, len(names))
	for _, name := range names {
		a := pools.Aggregate(candidates[name])
		out = append(out, gatewayv1.AggregatedInstanceType{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: statusOf(a)})
	}
	return out
}

// statusOf writes an aggregate as the API shows it, with InstanceType's printer cells.
func statusOf(a pools.Aggregated) gatewayv1.AggregatedInstanceTypeStatus {
	st := gatewayv1.AggregatedInstanceTypeStatus{Clusters: a.Clusters, Inactive: a.Inactive,
		Accelerator: capacityView(a.Views.Exclusive), AcceleratorShared: capacityView(a.Views.Shared),
		AcceleratorSliced: capacityView(a.Views.Sliced), CPU: capacityView(a.Views.CPU),
		AcceleratorPartitioned: &workerv1.PartitionedView{CapacityView: *capacityView(a.Views.Partitioned)}}
	profiles := make([]string, 0, len(a.Views.RemainingProfiles))
	for p := range a.Views.RemainingProfiles {
		profiles = append(profiles, p)
	}
	sort.Strings(profiles)
	for _, p := range profiles {
		st.AcceleratorPartitioned.RemainingProfiles = append(st.AcceleratorPartitioned.RemainingProfiles,
			workerv1.ProfileCount{Name: p, Count: a.Views.RemainingProfiles[p]})
	}
	for _, t := range a.Tiers {
		st.Tiers = append(st.Tiers, gatewayv1.AggregatedTier{Winner: t.Winner, Clusters: t.Clusters, OnceMaxRequest: gatewayv1.TierBundle{
			Accelerator: quantity(t.OnceMaxRequest.Exclusive.OnceMaxRequest), AcceleratorShared: quantity(t.OnceMaxRequest.Shared.OnceMaxRequest),
			AcceleratorSliced: quantity(t.OnceMaxRequest.Sliced.OnceMaxRequest), AcceleratorPartitioned: quantity(t.OnceMaxRequest.Partitioned.OnceMaxRequest),
			CPU: quantity(t.OnceMaxRequest.CPU.OnceMaxRequest)}})
	}
	views := workerv1.InstanceTypeStatus{Accelerator: st.Accelerator, AcceleratorShared: st.AcceleratorShared,
		AcceleratorSliced: st.AcceleratorSliced, AcceleratorPartitioned: st.AcceleratorPartitioned, CPU: st.CPU}
	st.Summary = workerv1.InstanceTypeSummary{Accelerator: workerv1.FormatAccelerator(&views), CPU: workerv1.FormatView(st.CPU),
		Partitions: workerv1.FormatPartitions(&views)}
	return st
}

// viewsOf reads a member's InstanceType status back into the views it was made from; a missing view is 0/0.
func viewsOf(st *workerv1.InstanceTypeStatus) pools.Views {
	v := pools.Views{Exclusive: view(st.Accelerator), Shared: view(st.AcceleratorShared), Sliced: view(st.AcceleratorSliced), CPU: view(st.CPU)}
	if pt := st.AcceleratorPartitioned; pt != nil {
		v.Partitioned = view(&pt.CapacityView)
		for _, p := range pt.RemainingProfiles {
			if v.RemainingProfiles == nil {
				v.RemainingProfiles = map[string]int64{}
			}
			v.RemainingProfiles[p.Name] += p.Count
		}
	}
	return v
}

func view(c *workerv1.CapacityView) pools.View {
	if c == nil {
		return pools.View{}
	}
	return pools.View{Capacity: c.Capacity.Value(), OnceMaxRequest: c.OnceMaxRequest.Value(), Remaining: c.Remaining.Value()}
}

func capacityView(v pools.View) *workerv1.CapacityView {
	return &workerv1.CapacityView{Capacity: quantity(v.Capacity), OnceMaxRequest: quantity(v.OnceMaxRequest), Remaining: quantity(v.Remaining)}
}

func quantity(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }

// namespacedBefore orders objects by namespace, then name.
func namespacedBefore(a, b metav1.ObjectMeta) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// sorted returns the states by name.
func sorted(states []MemberState) []MemberState {
	out := append([]MemberState(nil), states...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
