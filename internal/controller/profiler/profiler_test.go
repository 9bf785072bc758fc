package profiler_test

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/profiler"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.ControllerSuite

func TestMain(m *testing.M) { os.Exit(testenv.ControllerMain(m, &suite)) }

// epycNode is the walkthrough's CPU node as NFD labels it: 16 cores of an AMD EPYC 7R13.
func epycNode(name string) *corev1.Node {
	return builders.MakeNode(name).Label(pools.LabelCPUVendor, "AMD").
		Annotation(pools.AnnotationCPUName, "AMD EPYC 7R13 Processor").Capacity(corev1.ResourceCPU, "16").Obj()
}

func workerFeature(node string, labels map[string]string) *nfdv1alpha1.NodeFeature {
	return &nfdv1alpha1.NodeFeature{
		ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: profiler.NodeFeatureName(node),
			Labels: map[string]string{nfdv1alpha1.NodeFeatureObjNodeNameLabel: node, "app.kubernetes.io/part-of": profiler.PartOf}},
		Spec: nfdv1alpha1.NodeFeatureSpec{Labels: labels},
	}
}

// TestReconcile profiles one node and reads back its worker NodeFeature and its Devices object's identity
// labels; a second reconcile of the converged node must write nothing.
func TestReconcile(t *testing.T) {
	suite.Skip(t)
	epyc := map[string]string{"general.feature.gpustack.ai/amd-epyc-7r13": "true",
		"general.feature.gpustack.ai/amd-epyc-7r13.count": "16", "general.feature.gpustack.ai/amd": "true"}
	with := func(l map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for k, v := range l {
			out[k] = v
		}
		return out
	}
	type want struct {
		Feature       map[string]string
		DevicesLabels map[string]string
	}
	cases := map[string]struct {
		reason  string
		objects []client.Object
		want    want
	}{
		"NewNode": {
			reason:  "A new node is managed, with its CPU's gKey, core count and manufacturer.",
			objects: []client.Object{epycNode("new")},
			want:    want{Feature: with(epyc, pools.LabelManaged, "true")},
		},
		"ManagedFlagKept": {
			reason: "An administrator's gpustack.ai/managed=false on the NodeFeature takes the node out of its pools and stays.",
			objects: []client.Object{epycNode("unmanaged"),
				workerFeature("unmanaged", map[string]string{pools.LabelManaged: "false"})},
			want: want{Feature: with(epyc, pools.LabelManaged, "false")},
		},
		"DevicesStamped": {
			reason: "The node's Devices object gets the node's platform, managed flag and gKey as labels.",
			objects: []client.Object{builders.MakeNode("stamped").Label(pools.LabelCPUVendor, "AMD").Label(pools.LabelManaged, "true").
				Label("general.feature.gpustack.ai/amd-epyc-7r13", "true").Label("general.feature.gpustack.ai/amd-epyc-7r13.count", "16").
				Annotation(pools.AnnotationCPUName, "AMD EPYC 7R13 Processor").Capacity(corev1.ResourceCPU, "16").Obj(),
				builders.MakeDevices("stamped").Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj()},
			want: want{Feature: with(epyc, pools.LabelManaged, "true"), DevicesLabels: map[string]string{
				pools.LabelOS: "linux", pools.LabelArch: "amd64", pools.LabelManaged: "true",
				"general.feature.gpustack.ai/amd-epyc-7r13": "true"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			suite.Create(t, tc.objects...)
			node := tc.objects[0]
			t.Cleanup(func() { _ = suite.Client.Delete(ctx, workerFeature(node.GetName(), nil)) })
			c, writes := testenv.CountWrites(suite.Client)
			r := &profiler.Reconciler{Client: c, Recorder: record.NewFakeRecorder(10)}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			}
			nf := &nfdv1alpha1.NodeFeature{}
			if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(workerFeature(node.GetName(), nil)), nf); err != nil {
				t.Fatalf("%s\nthe worker NodeFeature: %v", tc.reason, err)
			}
			got := want{Feature: nf.Spec.Labels}
			d := &workerv1.Devices{}
			if err := suite.Client.Get(ctx, req.NamespacedName, d); err == nil {
				got.DevicesLabels = d.Labels
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nReconcile(...): -want, +got:\n%s", tc.reason, diff)
			}
			if nf.Labels[nfdv1alpha1.NodeFeatureObjNodeNameLabel] != node.GetName() {
				t.Errorf("%s\nthe NodeFeature's node label is %q, want %q", tc.reason, nf.Labels[nfdv1alpha1.NodeFeatureObjNodeNameLabel], node.GetName())
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

// TestManualManagement turns on node-management-manual: the profiler then leaves gpustack.ai/managed to the
// administrator and publishes none.
func TestManualManagement(t *testing.T) {
	suite.Skip(t)
	ctx := context.Background()
	suite.Create(t, &workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace,
		Name: workerv1.SettingNodeManagementManual}, Spec: workerv1.SettingSpec{Value: "true"}}, epycNode("manual"))
	t.Cleanup(func() { _ = suite.Client.Delete(ctx, workerFeature("manual", nil)) })
	r := &profiler.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(10)}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "manual"}}); err != nil {
		t.Fatal(err)
	}
	nf := &nfdv1alpha1.NodeFeature{}
	if err := suite.Client.Get(ctx, client.ObjectKeyFromObject(workerFeature("manual", nil)), nf); err != nil {
		t.Fatal(err)
	}
	if v, ok := nf.Spec.Labels[pools.LabelManaged]; ok {
		t.Errorf("with manual node management the NodeFeature says %s=%q, want no such label", pools.LabelManaged, v)
	}
}

// TestNodeGone reconciles a node that no longer exists: its Devices object is deleted with it.
func TestNodeGone(t *testing.T) {
	suite.Skip(t)
	ctx := context.Background()
	suite.Create(t, builders.MakeDevices("gone").Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj())
	r := &profiler.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(10)}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "gone"}}); err != nil {
		t.Fatal(err)
	}
	err := suite.Client.Get(ctx, client.ObjectKey{Name: "gone"}, &workerv1.Devices{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the Devices object of a node that is gone: Get says %v, want NotFound", err)
	}
}
