package podcards_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/podcards"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.ControllerSuite

func TestMain(m *testing.M) { os.Exit(testenv.ControllerMain(m, &suite)) }

// makePod returns a Pod bound to node whose one container "main" asks limits, in the given phase, with the
// cards already recorded for it when recorded is not empty.
func makePod(name, node string, phase corev1.PodPhase, limits map[string]string, recorded string) *corev1.Pod {
	l := corev1.ResourceList{}
	for k, v := range limits {
		l[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: l}}}},
		Status: corev1.PodStatus{Phase: phase}}
	if recorded != "" {
		p.Annotations = map[string]string{pools.AnnotationAllocated: recorded}
	}
	return p
}

// TestReconcile rebuilds the ledger of a node with two A10G cards from the Pods bound to it, and reads back each
// card's entry and the cards recorded on the Pod; a second reconcile of the converged node must write nothing.
func TestReconcile(t *testing.T) {
	suite.Skip(t)
	whole := map[string]string{"nvidia.com/gpu": "1"}
	slice := map[string]string{"nvidia.com/gpu.sliced": "1", "nvidia.com/gpu.sliced.units": "320000"}
	card := func(node string, i int) string { return fmt.Sprintf("nvidia-%s-%d", node, i) }
	type want struct {
		// Cards are the ledger's entries, card ID -> mode/allocated/remaining/slices.
		Cards map[string]string
		// Recorded is the Pod's record of its cards.
		Recorded string
	}
	cases := map[string]struct {
		reason string
		node   string
		pod    func(node string) *corev1.Pod
		want   func(node string) want
	}{
		"WholeCard": {
			reason: "A whole card is placed on the first free card and recorded on the Pod.",
			node:   "whole",
			pod:    func(n string) *corev1.Pod { return makePod("whole", n, corev1.PodRunning, whole, "") },
			want: func(n string) want {
				return want{Cards: map[string]string{card(n, 0): "1/1600000/0/0", card(n, 1): "0/0/1600000/0"},
					Recorded: fmt.Sprintf(`{"main":[%q]}`, card(n, 0))}
			},
		},
		"Slice": {
			reason: "A slice of 320,000 units is charged on one card, which becomes sliced.",
			node:   "slice",
			pod:    func(n string) *corev1.Pod { return makePod("slice", n, corev1.PodRunning, slice, "") },
			want: func(n string) want {
				return want{Cards: map[string]string{card(n, 0): "3/320000/1280000/1", card(n, 1): "0/0/1600000/0"},
					Recorded: fmt.Sprintf(`{"main":[%q]}`, card(n, 0))}
			},
		},
		"RecordedCardKept": {
			reason: "A claim placed before keeps its card, though another is free and first.",
			node:   "kept",
			pod: func(n string) *corev1.Pod {
				return makePod("kept", n, corev1.PodRunning, whole, fmt.Sprintf(`{"main":[%q]}`, card(n, 1)))
			},
			want: func(n string) want {
				return want{Cards: map[string]string{card(n, 0): "0/0/1600000/0", card(n, 1): "1/1600000/0/0"},
					Recorded: fmt.Sprintf(`{"main":[%q]}`, card(n, 1))}
			},
		},
		"FinishedReleased": {
			reason: "A finished Pod holds no card.",
			node:   "finished",
			pod:    func(n string) *corev1.Pod { return makePod("finished", n, corev1.PodSucceeded, whole, "") },
			want: func(n string) want {
				return want{Cards: map[string]string{card(n, 0): "0/0/1600000/0", card(n, 1): "0/0/1600000/0"}}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			pod := tc.pod(tc.node)
			suite.Create(t, builders.MakeDevices(tc.node).Cards("nvidia", "NVIDIA A10G", 24576, 2).Obj(), pod)
			c, writes := testenv.CountWrites(suite.Client)
			r := &podcards.Reconciler{Client: c, Recorder: record.NewFakeRecorder(10), ReleaseTerminated: true}
			req := reconcile.Request{NamespacedName: client.ObjectKey{Name: tc.node}}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			}
			d := &workerv1.Devices{}
			if err := suite.Client.Get(ctx, req.NamespacedName, d); err != nil {
				t.Fatal(err)
			}
			if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				t.Fatal(err)
			}
			got := want{Cards: map[string]string{}, Recorded: pod.Annotations[pools.AnnotationAllocated]}
			for _, g := range d.Status.Groups {
				for _, a := range g.Accelerators {
					got.Cards[a.ID] = fmt.Sprintf("%d/%d/%d/%d", a.Mode, a.Allocated, a.Remaining, a.AllocatedSlices)
				}
			}
			if diff := cmp.Diff(tc.want(tc.node), got); diff != "" {
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

// TestConflictReported puts two whole-card Pods on a node with one card: the older one holds it, the newer one
// is not charged, and the node gets a LedgerConflict event instead of a card below zero.
func TestConflictReported(t *testing.T) {
	suite.Skip(t)
	ctx := context.Background()
	node := "conflict"
	first := makePod("conflict-first", node, corev1.PodRunning, map[string]string{"nvidia.com/gpu": "1"}, "")
	suite.Create(t, builders.MakeDevices(node).Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj(), first)
	second := makePod("conflict-second", node, corev1.PodRunning, map[string]string{"nvidia.com/gpu": "1"}, "")
	suite.Create(t, second)
	events := record.NewFakeRecorder(10)
	r := &podcards.Reconciler{Client: suite.Client, Recorder: events, ReleaseTerminated: true}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: node}}); err != nil {
		t.Fatal(err)
	}
	d := &workerv1.Devices{}
	if err := suite.Client.Get(ctx, client.ObjectKey{Name: node}, d); err != nil {
		t.Fatal(err)
	}
	if a := d.Status.Groups[0].Accelerators[0]; a.Remaining != 0 || a.Allocated != pools.M {
		t.Errorf("the one card: allocated %d, remaining %d; want %d and 0", a.Allocated, a.Remaining, pools.M)
	}
	select {
	case e := <-events.Events:
		if want := "Warning LedgerConflict"; len(e) < len(want) || e[:len(want)] != want {
			t.Errorf("event %q, want a %s", e, want)
		}
	default:
		t.Errorf("no event for the Pod that did not fit, want a LedgerConflict")
	}
}
