package instance

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
)

func TestPhase(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo",
			Labels: map[string]string{"kueue.x-k8s.io/queue-name": "gpustack-fnv64-c4680bb149644f1c"}}}
	}
	type want struct {
		phase workerv1.InstancePhase
		msg   string
	}
	cases := map[string]struct {
		reason string
		pod    func() *corev1.Pod
		want   want
	}{
		"Gated": {
			reason: "A Pod Kueue holds waits for quota in its queue, and the message says where to look.",
			pod: func() *corev1.Pod {
				p := base()
				p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: kueueGate}}
				return p
			},
			want: want{workerv1.InstanceStarting, "waiting for quota in queue gpustack-fnv64-c4680bb149644f1c (kubectl -n default get workloads)"},
		},
		"Unschedulable": {
			reason: "A Pod the scheduler cannot place carries the scheduler's words.",
			pod: func() *corev1.Pod {
				p := base()
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Message: "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."}}
				return p
			},
			want: want{workerv1.InstanceStarting, "unschedulable: 0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."},
		},
		"Ready": {
			reason: "A running, ready Pod is a Ready Instance.",
			pod: func() *corev1.Pod {
				p := base()
				p.Spec.NodeName, p.Status.Phase = "node-a10g", corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
				return p
			},
			want: want{workerv1.InstanceReady, ""},
		},
		"ImagePull": {
			reason: "A container that cannot start says why.",
			pod: func() *corev1.Pod {
				p := base()
				p.Spec.NodeName, p.Status.Phase = "node-a10g", corev1.PodPending
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
					Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "pull access denied"}}}}
				return p
			},
			want: want{workerv1.InstanceStarting, "container main: pull access denied"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			phase, msg := Phase(tc.pod())
			if diff := cmp.Diff(tc.want, want{phase, msg}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nPhase(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWaitMessage(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo",
		Labels: map[string]string{"kueue.x-k8s.io/queue-name": "q"}}}
	wl := func(checks []kueue.AdmissionCheckState, conds ...metav1.Condition) *kueue.Workload {
		return &kueue.Workload{Status: kueue.WorkloadStatus{AdmissionChecks: checks, Conditions: conds}}
	}
	cases := map[string]struct {
		reason string
		wl     *kueue.Workload
		want   string
	}{
		"NoWorkloadYet": {reason: "Before Kueue made a Workload, the message says where to look.", want: "waiting for quota in queue q (kubectl -n default get workloads)"},
		"Quota": {reason: "Kueue's reason for not reserving quota is passed on.",
			wl:   wl(nil, metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Message: "couldn't assign flavors to pod set main: insufficient unused quota"}),
			want: "waiting for quota in queue q: couldn't assign flavors to pod set main: insufficient unused quota"},
		"PerCardFit": {reason: "The node-devices check's Retry names the pool, the request and the largest free piece.",
			wl: wl([]kueue.AdmissionCheckState{{Name: "gpustack-node-devices", State: kueue.CheckStateRetry,
				Message: "pool flavor f cannot take a slice of 60% now: node-t4-b: no card has room for a slice of 60%: the largest free piece is 40%"}}),
			want: "waiting for a card with room: pool flavor f cannot take a slice of 60% now: node-t4-b: no card has room for a slice of 60%: the largest free piece is 40%"},
		"Dispatching": {reason: "On a manager cluster, the MultiKueue check's own words while no member holds a copy.",
			wl: wl([]kueue.AdmissionCheckState{{Name: "gpustack-multikueue-gpu", State: kueue.CheckStatePending, Message: "no cluster reachable"}},
				metav1.Condition{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue}),
			want: "waiting for a member cluster to admit it: no cluster reachable"},
	}
	for name, tc := range cases {
		if got := WaitMessage(pod, tc.wl); got != tc.want {
			t.Errorf("%s: %s\nWaitMessage(...) = %q, want %q", name, tc.reason, got, tc.want)
		}
	}
}

func TestDispatchedWaitAndPhase(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo",
		Annotations: map[string]string{gatewayv1.AnnotationMemberReasons: "a: waiting for quota: insufficient quota; b: queued"}}}
	wl := &kueue.Workload{Status: kueue.WorkloadStatus{AdmissionChecks: []kueue.AdmissionCheckState{
		{Name: "gpustack-multikueue-gpu", State: kueue.CheckStatePending, Message: "MultiKueue's words"}}}}
	if got, want := WaitMessage(pod, wl), "waiting for a member cluster to admit it: a: waiting for quota: insufficient quota; b: queued"; got != want {
		t.Errorf("the gateway's member reasons come before MultiKueue's words\nWaitMessage(...) = %q, want %q", got, want)
	}

	type want struct {
		phase workerv1.InstancePhase
		msg   string
	}
	gated := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: kueueGate}}}}
		mutate(p)
		return p
	}
	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		want   want
	}{
		"NoStatusYet": {reason: "Admitted by a member whose Pod has not reported yet.", pod: gated(func(*corev1.Pod) {}),
			want: want{workerv1.InstanceStarting, "admitted by member cluster b: waiting for its Pod"}},
		"MemberGated": {reason: "The member's own Kueue still holds its copy (its per-card check).",
			pod: gated(func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
			}),
			want: want{workerv1.InstanceStarting, "member cluster b: waiting for a card with room there"}},
		"Ready": {reason: "The manager's copy stays gated; the member Pod's status it carries makes the Instance Ready.",
			pod: gated(func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			}),
			want: want{workerv1.InstanceReady, ""}},
		"Failed": {reason: "A member Pod's failure is the Instance's, with the member named.",
			pod:  gated(func(p *corev1.Pod) { p.Status.Phase, p.Status.Message = corev1.PodFailed, "OOMKilled" }),
			want: want{workerv1.InstanceFailed, "member cluster b: OOMKilled"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			phase, msg := DispatchedPhase(tc.pod, "b")
			if diff := cmp.Diff(tc.want, want{phase, msg}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nDispatchedPhase(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReadyCondition(t *testing.T) {
	type args struct {
		phase workerv1.InstancePhase
		msg   string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   metav1.Condition
	}{
		"Ready": {
			reason: "A Ready Instance is Ready, with a message a person can read.",
			args:   args{workerv1.InstanceReady, ""},
			want: metav1.Condition{Type: workerv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready",
				Message: "the Instance's Pod runs and is ready", ObservedGeneration: 3},
		},
		"Starting": {
			reason: "A starting Instance is not Ready; the reason names the step that holds it, the message says why.",
			args:   args{workerv1.InstanceStarting, "waiting for a card with room: ..."},
			want: metav1.Condition{Type: workerv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Starting",
				Message: "waiting for a card with room: ...", ObservedGeneration: 3},
		},
		"NoPhaseYet": {
			reason: "An Instance without a phase is Pending, a valid condition reason.",
			args:   args{"", "waiting"},
			want: metav1.Condition{Type: workerv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Pending",
				Message: "waiting", ObservedGeneration: 3},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ReadyCondition(tc.args.phase, tc.args.msg, 3)); diff != "" {
				t.Errorf("%s\nReadyCondition(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMemberAccess(t *testing.T) {
	annotated := func(v string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{gatewayv1.AnnotationMemberAccess: v}}}
	}
	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		want   instancepod.Access
	}{
		"NotNotedYet": {
			reason: "Before the gateway noted it, a dispatched Instance has no access.",
			pod:    &corev1.Pod{},
		},
		"Noted": {
			reason: "The member's addresses and node ports, as the gateway noted them.",
			pod:    annotated(`{"addresses":["10.0.0.5.nip.io"],"ports":[{"port":22,"protocol":"TCP","name":"ssh","nodePort":30022}]}`),
			want: instancepod.Access{Addresses: []string{"10.0.0.5.nip.io"}, Ports: []workerv1.InstanceStatusPort{
				{InstancePort: workerv1.InstancePort{Port: 22, Protocol: corev1.ProtocolTCP, Name: "ssh"}, NodePort: 30022}}},
		},
		"Unreadable": {
			reason: "A note this version cannot read gives none, not a part of it.",
			pod:    annotated(`{"addresses":["10.0.0.5"],"ports":"30022"}`),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, memberAccess(tc.pod)); diff != "" {
				t.Errorf("%s\nmemberAccess(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
