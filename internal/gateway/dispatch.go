package gateway

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
)

// MembersFlavor is the one ResourceFlavor of the manager's queues: the manager has no nodes, and which
// member's flavor a Workload gets is decided in the member.
const MembersFlavor = "gpustack-members"

// MemberKubeconfigSecret is the Secret in Kueue's namespace that a member's MultiKueueCluster reads its
// kubeconfig from (a copy of the member Secret: Kueue reads Secrets of its own namespace only).
func MemberKubeconfigSecret(member string) string { return "gpustack-member-" + member }

// CheckName is the MultiKueue AdmissionCheck of a dispatched type's queue; its MultiKueueConfig has the
// type's name.
func CheckName(typ string) string { return gatewayv1.MultiKueueCheckPrefix + typ }

// Dispatched is what the manager needs to dispatch the members' types through MultiKueue.
type Dispatched struct {
	// Clusters are one MultiKueueCluster per member, named after it (the name Workloads and Instances report).
	Clusters []kueue.MultiKueueCluster
	// Flavor is the manager queues' flavor.
	Flavor kueue.ResourceFlavor
	// Types are the dispatched types, by name.
	Types []DispatchedType
}

// DispatchedType is one type on the manager: the type itself (spec from the member that can take the largest
// single request, status aggregated), its queue, with quota summed over the members that offer it, the
// queue's MultiKueue check and config, and an entrance LocalQueue per namespace.
type DispatchedType struct {
	InstanceType workerv1.InstanceType
	Config       kueue.MultiKueueConfig
	Check        kueue.AdmissionCheck
	ClusterQueue kueue.ClusterQueue
	LocalQueues  []kueue.LocalQueue
}

// Dispatch computes what the manager holds for the members: a type is dispatched to the members whose last
// answer had it Active (MultiKueue itself stops sending to a member it cannot reach, and takes it back);
// the manager's queue of a type has the sum of those members' quotas for each resource, so the manager
// sends no more than the members can take. Output is sorted.
func Dispatch(states []MemberState, namespaces []string) Dispatched {
	labels := map[string]string{gatewayv1.LabelDispatch: "true"}
	out := Dispatched{Flavor: kueue.ResourceFlavor{TypeMeta: kueueType("ResourceFlavor"), ObjectMeta: metav1.ObjectMeta{Name: MembersFlavor, Labels: labels}}}
	offers := map[string]map[string]*workerv1.InstanceType{}
	queues := map[string]map[string]*kueue.ClusterQueue{}
	for _, s := range sorted(states) {
		out.Clusters = append(out.Clusters, kueue.MultiKueueCluster{TypeMeta: kueueType("MultiKueueCluster"),
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: labels},
			Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{KubeConfig: &kueue.KubeConfig{
				Location: MemberKubeconfigSecret(s.Name), LocationType: kueue.SecretLocationType}}}})
		for i := range s.InstanceTypes {
			it := &s.InstanceTypes[i]
			if it.Status.Phase != workerv1.InstanceTypeActive {
				continue
			}
			if offers[it.Name] == nil {
				offers[it.Name] = map[string]*workerv1.InstanceType{}
			}
			offers[it.Name][s.Name] = it
		}
		queues[s.Name] = map[string]*kueue.ClusterQueue{}
		for i := range s.ClusterQueues {
			queues[s.Name][s.ClusterQueues[i].Name] = &s.ClusterQueues[i]
		}
	}
	for _, a := range AggregatedInstanceTypes(states) {
		byMember := offers[a.Name]
		if len(byMember) == 0 {
			continue
		}
		members := make([]string, 0, len(byMember))
		for m := range byMember {
			members = append(members, m)
		}
		sort.Strings(members)
		source := byMember[members[0]]
		if len(a.Status.Tiers) > 0 && byMember[a.Status.Tiers[0].Winner] != nil {
			source = byMember[a.Status.Tiers[0].Winner]
		}
		var memberQueues []*kueue.ClusterQueue
		for _, m := range members {
			if cq := queues[m][a.Name]; cq != nil {
				memberQueues = append(memberQueues, cq)
			}
		}
		status := workerv1.InstanceTypeStatus{Entrance: pools.EntranceName(a.Name), Phase: workerv1.InstanceTypeActive,
			PhaseMessage: "dispatched through MultiKueue to " + strings.Join(members, ", "),
			Accelerator:  a.Status.Accelerator, AcceleratorShared: a.Status.AcceleratorShared, AcceleratorSliced: a.Status.AcceleratorSliced,
			AcceleratorPartitioned: a.Status.AcceleratorPartitioned, CPU: a.Status.CPU, Summary: a.Status.Summary}
		if !source.Spec.Acceleratable {
			status.Accelerator, status.AcceleratorShared, status.AcceleratorSliced, status.AcceleratorPartitioned = nil, nil, nil, nil
		} else {
			status.CPU = nil
		}
		out.Types = append(out.Types, dispatchType(source, status, members, memberQueues, namespaces, labels))
	}
	return out
}

// dispatchType is one type's objects on the manager.
func dispatchType(source *workerv1.InstanceType, status workerv1.InstanceTypeStatus, members []string, memberQueues []*kueue.ClusterQueue, namespaces []string, labels map[string]string) DispatchedType {
	name := source.Name
	itLabels := map[string]string{}
	for k, v := range source.Labels {
		itLabels[k] = v
	}
	itLabels[gatewayv1.LabelDispatch] = "true"
	d := DispatchedType{
		InstanceType: workerv1.InstanceType{TypeMeta: metav1.TypeMeta{APIVersion: workerv1.GroupVersion.String(), Kind: "InstanceType"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: itLabels}, Spec: *source.Spec.DeepCopy(), Status: status},
		Config: kueue.MultiKueueConfig{TypeMeta: kueueType("MultiKueueConfig"), ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: kueue.MultiKueueConfigSpec{Clusters: members}},
		Check: kueue.AdmissionCheck{TypeMeta: kueueType("AdmissionCheck"), ObjectMeta: metav1.ObjectMeta{Name: CheckName(name), Labels: labels},
			Spec: kueue.AdmissionCheckSpec{ControllerName: kueue.MultiKueueControllerName, Parameters: &kueue.AdmissionCheckParametersReference{
				APIGroup: kueue.GroupVersion.Group, Kind: "MultiKueueConfig", Name: name}}},
		ClusterQueue: kueue.ClusterQueue{TypeMeta: kueueType("ClusterQueue"), ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: kueue.ClusterQueueSpec{
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpExists}}},
				AdmissionChecksStrategy: &kueue.AdmissionChecksStrategy{AdmissionChecks: []kueue.AdmissionCheckStrategyRule{{Name: kueue.AdmissionCheckReference(CheckName(name))}}},
			}},
	}
	if quotas := summedQuotas(memberQueues); len(quotas) > 0 {
		covered := make([]corev1.ResourceName, 0, len(quotas))
		for _, q := range quotas {
			covered = append(covered, q.Name)
		}
		d.ClusterQueue.Spec.ResourceGroups = []kueue.ResourceGroup{{CoveredResources: covered,
			Flavors: []kueue.FlavorQuotas{{Name: MembersFlavor, Resources: quotas}}}}
	}
	for _, ns := range namespaces {
		d.LocalQueues = append(d.LocalQueues, kueue.LocalQueue{TypeMeta: kueueType("LocalQueue"),
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pools.EntranceName(name), Labels: labels},
			Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(name)}})
	}
	return d
}

// summedQuotas sums the nominal quotas of the members' queues per resource, over all their flavors, sorted by
// resource name.
func summedQuotas(queues []*kueue.ClusterQueue) []kueue.ResourceQuota {
	sums := map[corev1.ResourceName]resource.Quantity{}
	for _, cq := range queues {
		for _, g := range cq.Spec.ResourceGroups {
			for _, f := range g.Flavors {
				for _, r := range f.Resources {
					q := sums[r.Name]
					q.Add(r.NominalQuota)
					sums[r.Name] = q
				}
			}
		}
	}
	out := make([]kueue.ResourceQuota, 0, len(sums))
	for name, q := range sums {
		out = append(out, kueue.ResourceQuota{Name: name, NominalQuota: q})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func kueueType(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: kueue.GroupVersion.String(), Kind: kind}
}
