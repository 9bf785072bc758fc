package webhooks

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestWebhooks runs the package's Ginkgo suite on a real API server (the integration tier).
func TestWebhooks(t *testing.T) { testenv.RunSuite(t, "webhooks suite", &suite) }

var suite testenv.EnvtestSuite

// h100Pool creates the H100 pool's InstanceType, entrance "h100-entrance", and one node's inventory whose card
// is partitioned into MIG profiles of the H100 80GB.
func h100Pool() {
	GinkgoHelper()
	ctx := context.Background()
	it := builders.MakeInstanceType("gpustack--nvidia-h100-80gb-hbm3-linux-amd64").Obj()
	it.Spec.Acceleratable, it.Spec.AcceleratorGroup = true, "nvidia-h100-80gb-hbm3"
	it.Spec.Manufacturer, it.Spec.OS, it.Spec.Arch = "nvidia", "linux", "amd64"
	it.Spec.Memory = ptrQuantity("81559Mi")
	Expect(suite.Client.Create(ctx, it)).To(Succeed())
	it.Status.Entrance = "h100-entrance"
	Expect(suite.Client.Status().Update(ctx, it)).To(Succeed())
	card := workerv1.Accelerator{ID: "GPU-1", Status: workerv1.AcceleratorStatus{PhysicalSliced: &workerv1.PhysicalSlicedCapability{Count: 7,
		Profiles: []workerv1.PartitionProfile{{Name: "1g.10gb", MemoryMiB: 9856, Count: 7}, {Name: "3g.40gb", MemoryMiB: 40192, Count: 2}}}}}
	d := &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: "node-h100"}, Spec: workerv1.DevicesSpec{Groups: []workerv1.DeviceGroup{{
		ID: "h100-80gb-hbm3", Manufacturer: "nvidia", Name: "NVIDIA H100 80GB HBM3", Memory: 81559, Accelerators: []workerv1.Accelerator{card}}}}}
	Expect(suite.Client.Create(ctx, d)).To(Succeed())
	DeferCleanup(func() { _ = suite.Client.Delete(ctx, it); _ = suite.Client.Delete(ctx, d) })
}

func ptrQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func queuedPod(limits ...string) *corev1.Pod {
	l := corev1.ResourceList{}
	for i := 0; i < len(limits); i += 2 {
		l[corev1.ResourceName(limits[i])] = resource.MustParse(limits[i+1])
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "h100-entrance"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: l}}}}}
}

// Runs the Pod webhook's fold against a real API server holding the pool's type and a
// node's inventory: partitions cost their profile's memory share of the card, slices their memory's share,
// whatever the client set; a profile no card offers is left for the Pod rules.
var _ = Describe("the Pod webhook's fold against a real API server holding the pool's type and a node's inventory", func() {
	BeforeEach(h100Pool)
	type want struct {
		units map[string]int64
		err   string
	}
	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		want   want
	}{
		"Partition": {
			reason: "one 3g.40gb partition costs 40192/81559 of a card, overwriting the client's units",
			pod:    queuedPod("nvidia.com/gpu.partitioned", "1", "nvidia.com/gpu.partitioned.mig-3g.40gb", "1", "nvidia.com/gpu.partitioned.units", "1"),
			want:   want{units: map[string]int64{"nvidia.com/gpu.partitioned.units": 40192 * pools.M / 81559}},
		},
		"TwoPartitions": {
			reason: "two 1g.10gb partitions cost twice one",
			pod:    queuedPod("nvidia.com/gpu.partitioned", "2", "nvidia.com/gpu.partitioned.mig-1g.10gb", "2"),
			want:   want{units: map[string]int64{"nvidia.com/gpu.partitioned.units": 2 * (9856 * pools.M / 81559)}},
		},
		"SliceMiB": {
			reason: "a slice of 40779 MiB is half of the pool's card, and its compute budget defaults to 100 %",
			pod:    queuedPod("nvidia.com/gpu.sliced", "1", "nvidia.com/gpu.sliced.memory-mib", "40779"),
			want: want{units: map[string]int64{"nvidia.com/gpu.sliced.units": 40779 * pools.M / 81559,
				"nvidia.com/gpu.sliced.cores-percentage": 100}},
		},
		"UnknownProfile": {
			reason: "a profile no card of the pool offers is not folded: the Pod rules and the scheduler refuse it",
			pod:    queuedPod("nvidia.com/gpu.partitioned", "1", "nvidia.com/gpu.partitioned.mig-7g.80gb", "1"),
			want:   want{units: map[string]int64{"nvidia.com/gpu.partitioned.units": 0}},
		},
	}
	for name, tc := range cases {
		It(name+": "+tc.reason, func() {
			err := (&PodFolder{Reader: suite.Client}).Default(context.Background(), tc.pod)
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					Fail(fmt.Sprintf("%s\nDefault(...): error %v, want %q", tc.reason, err, tc.want.err))
				}
				return
			}
			if err != nil {
				Fail(fmt.Sprintf("%s\nDefault(...): %v", tc.reason, err))
			}
			got := map[string]int64{}
			for name := range tc.want.units {
				lim, req := tc.pod.Spec.Containers[0].Resources.Limits[corev1.ResourceName(name)], tc.pod.Spec.Containers[0].Resources.Requests[corev1.ResourceName(name)]
				if lim.Cmp(req) != 0 {
					Fail(fmt.Sprintf("%s: limit %s and request %s differ", name, lim.String(), req.String()))
				}
				got[name] = lim.Value()
			}
			if diff := cmp.Diff(tc.want.units, got); diff != "" {
				Fail(fmt.Sprintf("%s\nDefault(...): -want, +got:\n%s", tc.reason, diff))
			}
		})
	}
})
