package gateway

import (
	"fmt"
	"maps"
	"slices"
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

// Dispatch computes what the manager holds for the members. A type is dispatched once a member's last answer
// has it Active, and stays dispatched while a member's last answer has it in any phase: a member's Hold
// (spec.inactive) or a drain of its own stops nothing on the manager. Its config lists every member that has
// it, and every member of the config the manager holds now (configs: type -> clusters) that has not answered
// yet (the gateway restarted, the member's Secret made again): MultiKueue gives up a running Workload whose
// cluster leaves its config, and sends nothing to a cluster it cannot reach or whose queue holds. The
// manager's queue of a type has the sum of its members' quotas for each resource, so the manager sends no
// more than the members can take; its phase is Active while a member has it Active, Inactive otherwise. Output
// is sorted.
func Dispatch(states []MemberState, namespaces []string, configs map[string][]string) Dispatched {
	labels := map[string]string{gatewayv1.LabelDispatch: "true"}
	out := Dispatched{Flavor: kueue.ResourceFlavor{TypeMeta: kueueType("ResourceFlavor"), ObjectMeta: metav1.ObjectMeta{Name: MembersFlavor, Labels: labels}}}
	has := map[string]map[string]*workerv1.InstanceType{}
	queues := map[string]map[string]*kueue.ClusterQueue{}
	answered := map[string]bool{}
	for _, s := range sorted(states) {
		out.Clusters = append(out.Clusters, kueue.MultiKueueCluster{TypeMeta: kueueType("MultiKueueCluster"),
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: labels},
			Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{KubeConfig: &kueue.KubeConfig{
				Location: MemberKubeconfigSecret(s.Name), LocationType: kueue.SecretLocationType}}}})
		answered[s.Name] = s.Reachable || !s.LastSeen.IsZero()
		for i := range s.InstanceTypes {
			it := &s.InstanceTypes[i]
			if has[it.Name] == nil {
				has[it.Name] = map[string]*workerv1.InstanceType{}
			}
			has[it.Name][s.Name] = it
		}
		queues[s.Name] = map[string]*kueue.ClusterQueue{}
		for i := range s.ClusterQueues {
			queues[s.Name][s.ClusterQueues[i].Name] = &s.ClusterQueues[i]
		}
	}
	for _, a := range AggregatedInstanceTypes(states) {
		byMember := has[a.Name]
		var active, others []string
		for m, it := range byMember {
			if it.Status.Phase == workerv1.InstanceTypeActive {
				active = append(active, m)
				continue
			}
			others = append(others, fmt.Sprintf("%s (%s)", m, it.Status.Phase))
		}
		_, dispatched := configs[a.Name]
		if len(active) == 0 && !dispatched {
			continue
		}
		members := slices.Collect(maps.Keys(byMember))
		for _, m := range configs[a.Name] {
			if byMember[m] == nil && !answered[m] {
				members = append(members, m)
				others = append(others, m+" (not read yet)")
			}
		}
		sort.Strings(members)
		sort.Strings(active)
		sort.Strings(others)
		source := byMember[slices.Sorted(maps.Keys(byMember))[0]]
		if len(active) > 0 {
			source = byMember[active[0]]
		}
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
			PhaseMessage: "dispatched through MultiKueue to " + strings.Join(active, ", "),
			Accelerator:  a.Status.Accelerator, AcceleratorShared: a.Status.AcceleratorShared, AcceleratorSliced: a.Status.AcceleratorSliced,
			AcceleratorPartitioned: a.Status.AcceleratorPartitioned, CPU: a.Status.CPU, Summary: a.Status.Summary}
		if len(others) > 0 {
			status.PhaseMessage += "; kept in its config: " + strings.Join(others, ", ")
		}
		if len(active) == 0 {
			status.Phase = workerv1.InstanceTypeInactive
			status.PhaseMessage = "no member has it Active (" + strings.Join(others, ", ") + "): what runs keeps running, new Instances wait"
		}
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
				APIGroup: kueue.SchemeGroupVersion.Group, Kind: "MultiKueueConfig", Name: name}}},
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
	return metav1.TypeMeta{APIVersion: kueue.SchemeGroupVersion.String(), Kind: kind}
}
