package nodedevices_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/gpustack/gpustack-operator/internal/controller/nodedevices"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.ControllerSuite

func TestMain(m *testing.M) { os.Exit(testenv.ControllerMain(m, &suite)) }

func limits(l map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range l {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// makeWorkload returns a Workload of one Pod asking l, and the status Kueue gives it once quota is reserved on
// flavor (reserved false: quota not reserved yet), with the node-devices check Pending.
func makeWorkload(name, flavor string, l map[string]string, reserved bool) (*kueue.Workload, kueue.WorkloadStatus) {
	wl := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: kueue.WorkloadSpec{QueueName: "entrance", PodSets: []kueue.PodSet{{Name: "main", Count: 1,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: limits(l), Limits: limits(l)}}}}}}}}}
	now := metav1.Now()
	st := kueue.WorkloadStatus{AdmissionChecks: []kueue.AdmissionCheckState{{Name: nodedevices.Name,
		State: kueue.CheckStatePending, LastTransitionTime: now, Message: "waiting"}}}
	if reserved {
		st.Admission = &kueue.Admission{ClusterQueue: "pool", PodSetAssignments: []kueue.PodSetAssignment{{
			Name: "main", Count: ptr.To[int32](1),
			Flavors: map[corev1.ResourceName]kueue.ResourceFlavorReference{"credits.gpustack.ai/nvidia": kueue.ResourceFlavorReference(flavor)}}}}
		st.Conditions = []metav1.Condition{{Type: kueue.WorkloadQuotaReserved, Status: metav1.ConditionTrue,
			Reason: "QuotaReserved", Message: "reserved", LastTransitionTime: now}}
	}
	return wl, st
}

// TestReconcile judges one Workload card by card on a flavor of one node with one A10G card, and reads back the
// check's state; a second reconcile (the check no longer Pending) must write nothing.
func TestReconcile(t *testing.T) {
	suite.Skip(t)
	whole := map[string]string{"nvidia.com/gpu": "1"}
	type want struct {
		State   kueue.CheckState
		Message string
		Requeue *int32
	}
	cases := map[string]struct {
		reason   string
		asks     map[string]string
		reserved bool
		cardHeld bool
		want     want
	}{
		"Fits": {
			reason: "A whole card on a node whose one card is free is Ready, naming the node.",
			asks:   whole, reserved: true,
			want: want{State: kueue.CheckStateReady, Message: "fits on node fits"},
		},
		"CardHeld": {
			reason: "When a bound Pod holds the only card, the check asks Kueue to retry in 5 seconds and says why.",
			asks:   whole, reserved: true, cardHeld: true,
			want: want{State: kueue.CheckStateRetry, Message: "pool flavor cardheld cannot take", Requeue: ptr.To[int32](5)},
		},
		"NoAccelerator": {
			reason: "A Workload that asks for no accelerator passes.",
			asks:   map[string]string{"cpu": "1"}, reserved: true,
			want: want{State: kueue.CheckStateReady, Message: "asks for no accelerator"},
		},
		"QuotaNotReserved": {
			reason: "Before Kueue reserves quota the check is left Pending.",
			asks:   whole,
			want:   want{State: kueue.CheckStatePending, Message: "waiting"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			key := strings.ToLower(name)
			rf := &kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: key},
				Spec: kueue.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": key}}}
			suite.Create(t, rf, builders.MakeNode(key).Label("pool", key).Obj(),
				builders.MakeDevices(key).Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj())
			if tc.cardHeld {
				suite.Create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: key + "-holder"},
					Spec: corev1.PodSpec{NodeName: key, Containers: []corev1.Container{{Name: "main", Image: "busybox",
						Resources: corev1.ResourceRequirements{Limits: limits(whole)}}}},
					Status: corev1.PodStatus{Phase: corev1.PodRunning}})
			}
			wl, st := makeWorkload(key, key, tc.asks, tc.reserved)
			suite.Create(t, wl)
			wl.Status = st
			if err := suite.Client.Status().Update(ctx, wl); err != nil {
				t.Fatalf("cannot write the Workload's status as Kueue would: %v", err)
			}
			c, writes := testenv.CountWrites(suite.Client)
			r := &nodedevices.Reconciler{Client: c, Reader: c, Log: logr.Discard()}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(wl)}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			}
			if err := suite.Client.Get(ctx, req.NamespacedName, wl); err != nil {
				t.Fatal(err)
			}
			s := wl.Status.AdmissionChecks[0]
			got := want{State: s.State, Message: s.Message, Requeue: s.RequeueAfterSeconds}
			if strings.HasPrefix(got.Message, tc.want.Message) {
				got.Message = tc.want.Message // the rest names the demand and the reason, which pools' tests cover
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nReconcile(...): -want, +got:\n%s", tc.reason, diff)
			}
			writes.Reset()
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
			if w := writes.List(); len(w) > 0 {
				t.Errorf("%s\na second Reconcile(...) wrote %v, want nothing", tc.reason, w)
			}
		})
	}
}
