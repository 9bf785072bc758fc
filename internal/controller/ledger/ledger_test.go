package ledger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
	"github.com/gpustack/gpustack-operator/internal/controller/ledger"
	"github.com/gpustack/gpustack-operator/internal/metrics"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestLedger(t *testing.T) { testenv.RunSuite(t, "ledger controller suite", &suite) }

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
		p.Annotations = map[string]string{workerv1.AnnotationAllocated: recorded}
	}
	return p
}

var (
	whole = map[string]string{"nvidia.com/gpu": "1"}
	slice = map[string]string{"nvidia.com/gpu.sliced": "1", "nvidia.com/gpu.sliced.units": "320000"}
)

func card(node string, i int) string { return fmt.Sprintf("nvidia-%s-%d", node, i) }

// want is what a spec reads back: the ledger's entries, card ID -> mode/allocated/remaining/slices, and the
// Pod's record of its cards.
type want struct {
	Cards    map[string]string
	Recorded string
}

var _ = Describe("Reconcile", func() {
	ctx := context.Background()

	DescribeTable("rebuilds the ledger of a node with two A10G cards from its Pods and records new placements "+
		"on them, then writes nothing on a converged second reconcile",
		func(node string, pod *corev1.Pod, w want) {
			suite.Create(builders.MakeDevices(node).Cards("nvidia", "NVIDIA A10G", 24576, 2).Obj(), pod)
			c, writes := testenv.CountWrites(suite.Client)
			r := &ledger.Reconciler{Client: c, Recorder: record.NewFakeRecorder(10), ReleaseTerminated: true}
			req := reconcile.Request{NamespacedName: client.ObjectKey{Name: node}}
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())

			d := &workerv1.Devices{}
			Expect(suite.Client.Get(ctx, req.NamespacedName, d)).To(Succeed())
			Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			got := want{Cards: map[string]string{}, Recorded: pod.Annotations[workerv1.AnnotationAllocated]}
			for _, g := range d.Status.Groups {
				for _, a := range g.Accelerators {
					got.Cards[a.ID] = fmt.Sprintf("%d/%d/%d/%d", a.Mode, a.Allocated, a.Remaining, a.AllocatedSlices)
				}
			}
			Expect(cmp.Diff(w, got)).To(BeEmpty(), "Reconcile(...): -want, +got")

			writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })
		},
		Entry("a whole card is placed on the first free card and recorded on the Pod",
			"whole", makePod("whole", "whole", corev1.PodRunning, whole, ""),
			want{Cards: map[string]string{card("whole", 0): "1/1600000/0/0", card("whole", 1): "0/0/1600000/0"},
				Recorded: fmt.Sprintf(`{"main":[%q]}`, card("whole", 0))}),
		Entry("a slice of 320,000 units is charged on one card, which becomes sliced",
			"slice", makePod("slice", "slice", corev1.PodRunning, slice, ""),
			want{Cards: map[string]string{card("slice", 0): "3/320000/1280000/1", card("slice", 1): "0/0/1600000/0"},
				Recorded: fmt.Sprintf(`{"main":[%q]}`, card("slice", 0))}),
		Entry("a claim placed before keeps its card, though another is free and first",
			"kept", makePod("kept", "kept", corev1.PodRunning, whole, fmt.Sprintf(`{"main":[%q]}`, card("kept", 1))),
			want{Cards: map[string]string{card("kept", 0): "0/0/1600000/0", card("kept", 1): "1/1600000/0/0"},
				Recorded: fmt.Sprintf(`{"main":[%q]}`, card("kept", 1))}),
		Entry("a finished Pod holds no card",
			"finished", makePod("finished", "finished", corev1.PodSucceeded, whole, ""),
			want{Cards: map[string]string{card("finished", 0): "0/0/1600000/0", card("finished", 1): "0/0/1600000/0"}}),
	)

	It("keeps a finished Pod's card charged while GPUSTACK_LEDGER_RELEASE_TERMINATED_PODS is false", func() {
		node := "kept-finished"
		suite.Create(builders.MakeDevices(node).Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj(),
			makePod(node, node, corev1.PodSucceeded, whole, fmt.Sprintf(`{"main":[%q]}`, card(node, 0))))
		release, err := ledger.ReleaseTerminatedFromEnv(func(k string) string {
			if k == ledger.EnvReleaseTerminated {
				return "false"
			}
			return ""
		})
		Expect(err).NotTo(HaveOccurred())
		r := &ledger.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(10), ReleaseTerminated: release}
		_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: node}})
		Expect(err).NotTo(HaveOccurred())
		d := &workerv1.Devices{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: node}, d)).To(Succeed())
		a := d.Status.Groups[0].Accelerators[0]
		Expect([]int64{a.Allocated, a.Remaining}).To(Equal([]int64{pools.M, 0}), "the finished Pod's card: allocated, remaining")
	})

	It("charges the older of two whole-card Pods on a one-card node and reports the other as a LedgerConflict", func() {
		node := "conflict"
		suite.Create(builders.MakeDevices(node).Cards("nvidia", "NVIDIA A10G", 24576, 1).Obj(),
			makePod("conflict-first", node, corev1.PodRunning, whole, ""))
		suite.Create(makePod("conflict-second", node, corev1.PodRunning, whole, ""))
		events := record.NewFakeRecorder(10)
		conflicts := testutil.ToFloat64(metrics.LedgerConflicts)
		r := &ledger.Reconciler{Client: suite.Client, Recorder: events, ReleaseTerminated: true}
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: node}})
		Expect(err).NotTo(HaveOccurred())
		d := &workerv1.Devices{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: node}, d)).To(Succeed())
		a := d.Status.Groups[0].Accelerators[0]
		Expect([]int64{a.Allocated, a.Remaining}).To(Equal([]int64{pools.M, 0}), "the one card: allocated, remaining")
		Expect(events.Events).To(Receive(HavePrefix("Warning LedgerConflict")))
		Expect(testutil.ToFloat64(metrics.LedgerConflicts)-conflicts).To(Equal(1.0), "ledger conflicts counted")
	})
	It("charges a ResourceClaim allocated a card of the node's pool, naming it on the card, before a new container's slice", func(ctx SpecContext) {
		node := "claimed"
		suite.Create(builders.MakeDevices(node).Cards("nvidia", "NVIDIA A10G", 24576, 2).Obj(),
			makePod("claimed-slice", node, corev1.PodRunning, slice, ""))
		rc := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "claimed"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "card", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpustack-nvidia"}}}}}}
		suite.Create(rc)
		rc.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: "card", Driver: "nvidia.gpustack.ai", Pool: node, Device: "card-0"}}}}
		Expect(suite.Client.Status().Update(ctx, rc)).To(Succeed())

		// The claims are listed through the worker's index, which only a cache has.
		informers, err := cache.New(suite.Config, cache.Options{Scheme: suite.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(cachepolicy.IndexPodsByNode(ctx, informers)).To(Succeed())
		Expect(cachepolicy.IndexResourceClaimsByPool(ctx, informers)).To(Succeed())
		cacheCtx, stop := context.WithCancel(context.Background())
		DeferCleanup(stop)
		go func() { _ = informers.Start(cacheCtx) }()
		Expect(informers.WaitForCacheSync(ctx)).To(BeTrue())
		c, err := client.New(suite.Config, client.Options{Scheme: suite.Client.Scheme(), Cache: &client.CacheOptions{Reader: informers}})
		Expect(err).NotTo(HaveOccurred())

		r := &ledger.Reconciler{Client: c, Recorder: record.NewFakeRecorder(10), ReleaseTerminated: true, ResourceClaims: true}
		_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: node}})
		Expect(err).NotTo(HaveOccurred())
		d := &workerv1.Devices{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: node}, d)).To(Succeed())
		got := map[string]string{}
		for _, a := range d.Status.Groups[0].Accelerators {
			got[a.ID] = fmt.Sprintf("%d/%d/%d/%d %v", a.Mode, a.Allocated, a.Remaining, a.AllocatedSlices, a.ResourceClaims)
		}
		Expect(got).To(Equal(map[string]string{card(node, 0): "1/1600000/0/0 [default/claimed]", card(node, 1): "3/320000/1280000/1 []"}),
			"the claim's card is held whole and names it; the slice went to the other card")
	})
})

func TestReleaseTerminatedFromEnv(t *testing.T) {
	type want struct {
		Release bool
		Err     string
	}
	cases := map[string]struct {
		reason string
		value  string
		want   want
	}{
		"Unset": {reason: "Finished Pods free their cards by default.", want: want{Release: true}},
		"False": {reason: "false keeps them charged.", value: "false", want: want{Release: false}},
		"Invalid": {reason: "A value that is no boolean stops the worker, naming the variable.", value: "no",
			want: want{Err: `GPUSTACK_LEDGER_RELEASE_TERMINATED_PODS="no": want true or false`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			release, err := ledger.ReleaseTerminatedFromEnv(func(k string) string {
				if k == ledger.EnvReleaseTerminated {
					return tc.value
				}
				return ""
			})
			got := want{Release: release}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nReleaseTerminatedFromEnv(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
