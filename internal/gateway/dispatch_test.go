package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
)

// memberQueue is a member's ClusterQueue of one flavor per quota, each quota "resource=amount".
func memberQueue(name string, quotas ...[2]string) kueue.ClusterQueue {
	cq := kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g := kueue.ResourceGroup{}
	for i, q := range quotas {
		g.Flavors = append(g.Flavors, kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(name + string(rune('a'+i))),
			Resources: []kueue.ResourceQuota{{Name: corev1.ResourceName(q[0]), NominalQuota: resource.MustParse(q[1])}}})
	}
	cq.Spec.ResourceGroups = []kueue.ResourceGroup{g}
	return cq
}

// described gives a type a description naming the member it comes from, to tell whose spec the manager copied.
func described(it workerv1.InstanceType, member string) workerv1.InstanceType {
	it.Spec.Description = member
	return it
}

func TestDispatch(t *testing.T) {
	type row struct {
		Name, SpecFrom, Phase, Message, Check string
		Clusters, Quotas, LocalQueues         []string
	}
	active, draining, inactive := workerv1.InstanceTypeActive, workerv1.InstanceTypeDraining, workerv1.InstanceTypeInactive
	cases := map[string]struct {
		reason     string
		states     []MemberState
		namespaces []string
		configs    map[string][]string
		want       []row
	}{
		"SummedAndMirrored": {
			reason: "A type two members offer goes to both, its quota summed per resource over their flavors, its spec from the member " +
				"that wins the first tier (the larger onceMaxRequest); a draining type is not dispatched.",
			states: []MemberState{
				{Name: "a", Reachable: true, InstanceTypes: []workerv1.InstanceType{described(gpuType("gpu", 2, 3, 4, active), "a"), gpuType("old", 1, 1, 1, draining)},
					ClusterQueues: []kueue.ClusterQueue{memberQueue("gpu", [2]string{"credits", "2000"}, [2]string{"credits", "1000"})}},
				{Name: "b", Reachable: true, InstanceTypes: []workerv1.InstanceType{described(gpuType("gpu", 4, 8, 8, active), "b")},
					ClusterQueues: []kueue.ClusterQueue{memberQueue("gpu", [2]string{"credits", "4000"}, [2]string{"cpu", "1M"})}},
			},
			namespaces: []string{"default", "team-a"},
			want: []row{{Name: "gpu", SpecFrom: "b", Phase: "Active", Message: "dispatched through MultiKueue to a, b", Check: "gpustack-multikueue-gpu",
				Clusters: []string{"a", "b"}, Quotas: []string{"cpu=1M", "credits=7k"},
				LocalQueues: []string{"default/" + pools.EntranceName("gpu"), "team-a/" + pools.EntranceName("gpu")}}},
		},
		"UnreachableKept": {
			reason: "A member that stopped answering keeps its types' place in the config: MultiKueue itself sends nothing to a cluster " +
				"it cannot reach and takes it back when it answers, so running Workloads are not given up on a blip.",
			states: []MemberState{
				{Name: "a", Reachable: true, InstanceTypes: []workerv1.InstanceType{described(gpuType("gpu", 2, 3, 4, active), "a")}},
				{Name: "b", Message: "cannot read member b", InstanceTypes: []workerv1.InstanceType{described(gpuType("gpu", 4, 8, 8, active), "b")}},
			},
			want: []row{{Name: "gpu", SpecFrom: "a", Phase: "Active", Message: "dispatched through MultiKueue to a, b", Check: "gpustack-multikueue-gpu",
				Clusters: []string{"a", "b"}}},
		},
		"HeldKept": {
			reason: "A type the manager dispatches stays while a member has it in any phase: a member's Hold (Inactive) keeps its " +
				"place in the config, and with no member Active the type is Inactive, not gone (its Instances on the manager keep running).",
			states: []MemberState{
				{Name: "a", Reachable: true, InstanceTypes: []workerv1.InstanceType{described(gpuType("gpu", 2, 3, 4, inactive), "a")},
					ClusterQueues: []kueue.ClusterQueue{memberQueue("gpu", [2]string{"credits", "2000"})}},
				{Name: "b", Reachable: true, InstanceTypes: []workerv1.InstanceType{described(gpuType("gpu", 4, 8, 8, draining), "b")}},
			},
			configs: map[string][]string{"gpu": {"a", "b"}},
			want: []row{{Name: "gpu", SpecFrom: "a", Phase: "Inactive", Check: "gpustack-multikueue-gpu",
				Message:  "no member has it Active (a (Inactive), b (Draining)): what runs keeps running, new Instances wait",
				Clusters: []string{"a", "b"}, Quotas: []string{"credits=2k"}}},
		},
		"NotReadYetKept": {
			reason: "A member in the config the manager holds that has not answered since the gateway started (or since its Secret " +
				"was made again) stays in the config; one that answered without the type leaves it.",
			states: []MemberState{
				{Name: "a", Reachable: true, InstanceTypes: []workerv1.InstanceType{described(gpuType("gpu", 2, 3, 4, active), "a")}},
				{Name: "b", Message: "not read yet"},
				{Name: "c", Reachable: true},
			},
			configs: map[string][]string{"gpu": {"a", "b", "c", "gone"}},
			want: []row{{Name: "gpu", SpecFrom: "a", Phase: "Active", Check: "gpustack-multikueue-gpu",
				Message:  "dispatched through MultiKueue to a; kept in its config: b (not read yet), gone (not read yet)",
				Clusters: []string{"a", "b", "gone"}}},
		},
		"NothingOffered": {
			reason: "A type no member has Active is not dispatched when the manager does not hold it yet.",
			states: []MemberState{{Name: "a", Reachable: true, InstanceTypes: []workerv1.InstanceType{gpuType("gpu", 1, 1, 1, draining)}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Dispatch(tc.states, tc.namespaces, tc.configs)
			var rows []row
			for _, d := range got.Types {
				r := row{Name: d.InstanceType.Name, SpecFrom: d.InstanceType.Spec.Description, Phase: string(d.InstanceType.Status.Phase),
					Message: d.InstanceType.Status.PhaseMessage, Check: string(d.ClusterQueue.Spec.AdmissionChecksStrategy.AdmissionChecks[0].Name),
					Clusters: d.Config.Spec.Clusters}
				if d.Check.Name != r.Check || d.Check.Spec.Parameters.Name != d.Config.Name {
					t.Errorf("%s: the queue's check %s and the check %s (config %s) disagree", d.InstanceType.Name, r.Check, d.Check.Name, d.Check.Spec.Parameters.Name)
				}
				for _, g := range d.ClusterQueue.Spec.ResourceGroups {
					for _, f := range g.Flavors {
						for _, q := range f.Resources {
							r.Quotas = append(r.Quotas, string(q.Name)+"="+q.NominalQuota.String())
						}
					}
				}
				for _, lq := range d.LocalQueues {
					if string(lq.Spec.ClusterQueue) != d.ClusterQueue.Name || lq.Name != d.InstanceType.Status.Entrance {
						t.Errorf("%s: LocalQueue %s/%s does not lead to its queue through the type's entrance", d.InstanceType.Name, lq.Namespace, lq.Name)
					}
					r.LocalQueues = append(r.LocalQueues, lq.Namespace+"/"+lq.Name)
				}
				rows = append(rows, r)
			}
			if diff := cmp.Diff(tc.want, rows); diff != "" {
				t.Errorf("%s\nDispatch(...): -want, +got:\n%s", tc.reason, diff)
			}
			var clusters []string
			for _, c := range got.Clusters {
				clusters = append(clusters, c.Name+"<-"+c.Spec.ClusterSource.KubeConfig.Location)
			}
			wantClusters := []string{}
			for _, s := range sorted(tc.states) {
				wantClusters = append(wantClusters, s.Name+"<-gpustack-member-"+s.Name)
			}
			if diff := cmp.Diff(wantClusters, clusters); diff != "" {
				t.Errorf("%s\nDispatch(...).Clusters: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// remoteCopy is a member's copy of the manager's Workload default/name, with its check message and quota condition.
func remoteCopy(name, check string, quota *metav1.Condition) kueue.Workload {
	wl := kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if check != "" {
		wl.Status.AdmissionChecks = []kueue.AdmissionCheckState{{Name: "gpustack-node-devices", State: kueue.CheckStatePending, Message: check}}
	}
	if quota != nil {
		wl.Status.Conditions = []metav1.Condition{*quota}
	}
	return wl
}

func TestMemberReasons(t *testing.T) {
	noQuota := &metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Message: "insufficient quota for cpu"}
	reserved := &metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue}
	cases := map[string]struct {
		reason string
		states []MemberState
		want   string
	}{
		"EachMember": {
			reason: "Each member holding a copy says why, in member order: the per-card check's words before the quota's.",
			states: []MemberState{
				{Name: "b", Dispatched: []kueue.Workload{remoteCopy("pod-x", "node-1: 0 free", reserved)}},
				{Name: "a", Dispatched: []kueue.Workload{remoteCopy("pod-x", "", noQuota), remoteCopy("pod-y", "", nil)}},
				{Name: "c"},
			},
			want: "a: waiting for quota: insufficient quota for cpu; b: waiting for a card with room: node-1: 0 free",
		},
		"Refused": {
			reason: "A member whose settings refuse the copy says so in its check's words, not as a wait for a card.",
			states: []MemberState{{Name: "a", Dispatched: []kueue.Workload{remoteCopy("pod-x",
				"refused by this cluster's settings: spec.containers[0].securityContext.privileged: Forbidden: no", reserved)}}},
			want: "a: refused by this cluster's settings: spec.containers[0].securityContext.privileged: Forbidden: no",
		},
		"NoCopyYet": {
			reason: "Before MultiKueue made any copy there is nothing to tell.",
			states: []MemberState{{Name: "a", Dispatched: []kueue.Workload{remoteCopy("pod-y", "", nil)}}},
		},
		"Queued": {
			reason: "A copy Kueue has not looked at yet is queued; one with quota and no check message is being admitted.",
			states: []MemberState{
				{Name: "a", Dispatched: []kueue.Workload{remoteCopy("pod-x", "", nil)}},
				{Name: "b", Dispatched: []kueue.Workload{remoteCopy("pod-x", "", reserved)}},
			},
			want: "a: queued; b: quota reserved, being admitted",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, MemberReasons("default", "pod-x", tc.states)); diff != "" {
				t.Errorf("%s\nMemberReasons(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNote(t *testing.T) {
	access := `{"addresses":["10.0.0.5"],"ports":[{"port":22,"protocol":"TCP","name":"ssh","nodePort":30022}]}`
	managerWorkload := func(cluster string, check kueue.CheckState) *kueue.Workload {
		wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-x-1",
			OwnerReferences: []metav1.OwnerReference{{Kind: "Pod", Name: "x"}}}}
		if check != "" {
			wl.Status.AdmissionChecks = []kueue.AdmissionCheckState{{Name: "gpustack-multikueue-t", State: check}}
		}
		if cluster != "" {
			wl.Status.ClusterName = &cluster
		}
		return wl
	}
	states := []MemberState{{Name: "a"}, {Name: "b", Access: map[string]string{"default/x": access, "other/x": "elsewhere"}}}
	type want struct {
		key, value string
		ok         bool
	}
	cases := map[string]struct {
		reason string
		wl     *kueue.Workload
		want   want
	}{
		"Pending": {
			reason: "While no member admitted it, the Pod carries the members' reasons (none yet here).",
			wl:     managerWorkload("", kueue.CheckStatePending),
			want:   want{key: gatewayv1.AnnotationMemberReasons, ok: true},
		},
		"NotTheGateways": {
			reason: "A Workload the gateway's check does not hold gets no note.",
			wl:     managerWorkload("", ""),
		},
		"Placed": {
			reason: "Once placed, the Pod carries where the member that runs it says its Instance is reached.",
			wl:     managerWorkload("b", kueue.CheckStateReady),
			want:   want{key: gatewayv1.AnnotationMemberAccess, value: access, ok: true},
		},
		"PlacedNotExposedYet": {
			reason: "A member whose worker has not noted the access yet gives none, so an older member's is not kept.",
			wl:     managerWorkload("a", kueue.CheckStateReady),
			want:   want{key: gatewayv1.AnnotationMemberAccess, ok: true},
		},
		"PlacedOnAnUnknownMember": {
			reason: "A member the gateway does not read (removed) leaves the note as it is.",
			wl:     managerWorkload("gone", kueue.CheckStateReady),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			got.key, got.value, got.ok = note(tc.wl, states)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nnote(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
