package deviceplugins

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/deviceagent/deviceplugin/deviceplugintest"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/vendors"
)

// poolOf waits until the InstanceType is composed and Active, and returns it.
func poolOf(name string) *workerv1.InstanceType {
	GinkgoHelper()
	it := &workerv1.InstanceType{}
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		if err := suite.Client.Get(context.Background(), client.ObjectKey{Name: name}, it); err != nil {
			return false, err.Error()
		}
		return it.Status.Phase == workerv1.InstanceTypeActive, fmt.Sprintf("InstanceType %s: phase %q, conditions %v", name, it.Status.Phase, it.Status.Conditions)
	})
	return it
}

// l4 is the pool of the two one-card L4 nodes.
const l4 = "gpustack--nvidia-l4-linux-amd64"

// create creates obj and deletes it when the spec ends.
func create(obj client.Object) {
	GinkgoHelper()
	Expect(suite.Client.Create(context.Background(), obj)).To(Succeed())
	DeferCleanup(func() {
		_ = suite.Client.Delete(context.Background(), obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
}

// granted waits until the Pod runs with its devices allocated by its node's plugins and returns what each
// container got as "container=resource", sorted, with the grants. A Pod the kubelet rejected (a plugin
// refused) fails the spec at once with the kubelet's reason.
func granted(name string) ([]string, []deviceplugintest.Grant) {
	GinkgoHelper()
	var grants []deviceplugintest.Grant
	Eventually(func(g Gomega) {
		pod := &corev1.Pod{}
		g.Expect(suite.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, pod)).To(Succeed())
		if pod.Status.Phase == corev1.PodFailed {
			StopTrying(fmt.Sprintf("pod %s on %s was rejected: %s: %s", name, pod.Spec.NodeName, pod.Status.Reason, pod.Status.Message)).Now()
		}
		var ok bool
		grants, ok = suite.Cluster.DeviceGrants(pod.UID)
		g.Expect(ok).To(BeTrue(), "pod %s (node %q, phase %s, gates %v, conditions %v) has no devices allocated yet",
			name, pod.Spec.NodeName, pod.Status.Phase, pod.Spec.SchedulingGates, pod.Status.Conditions)
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "pod %s started", name)
	}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	var what []string
	for _, g := range grants {
		what = append(what, g.Container+"="+g.Resource)
	}
	sort.Strings(what)
	return what, grants
}

// grantOf returns the grant of the resource.
func grantOf(grants []deviceplugintest.Grant, resource string) deviceplugintest.Grant {
	for _, g := range grants {
		if g.Resource == resource {
			return g
		}
	}
	return deviceplugintest.Grant{}
}

// sharePod is a bare Pod asking one share of a card of the pool, queued at its entrance LocalQueue.
func sharePod(name string, v vendors.Vendor, pool string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"kueue.x-k8s.io/queue-name": pools.EntranceName(pool)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceName(v.ResourceName + ".shared"): resource.MustParse("1"),
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
	}
}

// Each vendor's node holds three cards. An Instance of a whole card, a bare Pod of a share and, where the vendor's
// slices are enforced, an Instance of a slice are admitted by Kueue and the per-card check, bound, and then
// allocated by the node's plugins: every one must be granted, with what the container needs to use it. Where
// the vendor's slices are not enforced, the slice is refused at create, naming why.
var _ = DescribeTable("grants through the device plugins what Kueue admits",
	func(vendor, pool, prefix string) {
		v, ok := vendors.Lookup(vendor)
		Expect(ok).To(BeTrue())
		it := poolOf(pool)
		base, visibility := v.ResourceName, "device.gpustack.ai/"+v.Key+".visibility"

		create(builders.MakeInstance("default", prefix+"-whole", it.Name).Accelerators(1).Obj())
		create(sharePod(prefix+"-share", v, it.Name))
		slice := builders.MakeInstance("default", prefix+"-slice", it.Name).Slice(25, 50).Obj()
		if v.SlicesPerCard == 0 {
			err := suite.Client.Create(context.Background(), slice)
			Expect(err).To(MatchError(ContainSubstring("has no logical slicing")), "a slice of %s is refused", v.DisplayName)
			Expect(err.Error()).To(ContainSubstring(v.SliceGap))
		} else {
			create(slice)
		}

		what, grants := granted(prefix + "-whole")
		Expect(what).To(Equal([]string{"main=" + base, "sshd=" + visibility}))
		whole := grantOf(grants, base)
		Expect(whole.Response.Envs).NotTo(BeEmpty(), "the whole card is made visible")
		Expect(grantOf(grants, visibility).Response.Envs).To(Equal(whole.Response.Envs), "the SSH sidecar sees main's card")

		what, _ = granted(prefix + "-share")
		Expect(what).To(Equal([]string{"c=" + base + ".shared"}))

		if v.SlicesPerCard == 0 {
			return
		}
		what, grants = granted(prefix + "-slice")
		Expect(what).To(Equal([]string{"main=" + base + ".sliced", "sshd=" + visibility}))
		enforced := grantOf(grants, base+".sliced").Response
		Expect(len(enforced.Envs)+len(enforced.Mounts)).To(BeNumerically(">", 1), "the slice's enforcer gets its budget, not only the card: %v", enforced)
	},
	Entry("NVIDIA", "nvidia", "gpustack--nvidia-l40s-linux-amd64", "nvidia"),
	Entry("AMD", "amd", "gpustack--amd-instinct-mi300x-linux-amd64", "amd"),
	Entry("Huawei Ascend", "ascend", "gpustack--ascend-ascend910b3-linux-arm64", "ascend"),
	Entry("Cambricon", "cambricon", "gpustack--cambricon-mlu370-x8-linux-amd64", "mlu"),
	Entry("Hygon", "hygon", "gpustack--hygon-k100-ai-linux-amd64", "dcu"),
	Entry("Iluvatar", "iluvatar", "gpustack--iluvatar-bi-v150-linux-amd64", "iluvatar"),
	Entry("MetaX", "metax", "gpustack--metax-c500-linux-amd64", "metax"),
	Entry("Moore Threads", "mthreads", "gpustack--mthreads-mtt-s4000-linux-amd64", "mthreads"),
	Entry("T-Head", "thead", "gpustack--thead-ppu-zw810e-linux-amd64", "ppu"),
)

// An A30 in MIG mode: the partition Kueue admits is made by the simulated hardware through the plugin, and the
// container sees that partition, not the card. The node's partition pool follows the ledger: an empty A30
// offers four (its most of one profile, 1g.6gb), one 2g.12gb held leaves it 1 + 2, and it is four again once
// the partition goes.
var _ = It("grants a MIG partition through the plugin, and the pool key follows", func() {
	it := poolOf("gpustack--nvidia-a30-linux-amd64")
	poolKey := func(want string) {
		GinkgoHelper()
		e2esuite.WaitFor(time.Minute, func() (bool, string) {
			got := suite.Kubectl("get", "node", "node-a30", "-o", `jsonpath={.status.capacity.nvidia\.com/gpu\.partitioned}`)
			return got == want, "node-a30's nvidia.com/gpu.partitioned: " + got + ", want " + want
		})
	}
	poolKey("4")
	inst := builders.MakeInstance("default", "a30-mig", it.Name).Partition("2g.12gb").Obj()
	create(inst)
	what, grants := granted("a30-mig")
	Expect(what).To(Equal([]string{"main=nvidia.com/gpu.partitioned", "sshd=device.gpustack.ai/nvidia.visibility"}))
	Expect(grantOf(grants, "nvidia.com/gpu.partitioned").Response.Envs).To(HaveKeyWithValue("NVIDIA_VISIBLE_DEVICES", HavePrefix("MIG-")))
	poolKey("3")
	Expect(suite.Client.Delete(context.Background(), inst)).To(Succeed())
	poolKey("4")
})

// A Job of two Pods of one whole card each, on a pool of two one-card nodes: Kueue admits its one Workload,
// the per-card check places its Pods on the two nodes, and each node's plugin grants its card.
var _ = It("admits a Job of parallelism 2 on two one-card nodes", func() {
	it := poolOf(l4)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pair", Labels: map[string]string{"kueue.x-k8s.io/queue-name": pools.EntranceName(it.Name)}},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}},
	}
	create(job)
	var pods corev1.PodList
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		if err := suite.Client.List(context.Background(), &pods, client.InNamespace("default"), client.MatchingLabels{"batch.kubernetes.io/job-name": "pair"}); err != nil {
			return false, err.Error()
		}
		var running []string
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running = append(running, p.Name+"@"+p.Spec.NodeName)
			}
		}
		return len(running) == 2, fmt.Sprintf("running: %s", strings.Join(running, ", "))
	})
	nodes := map[string]bool{}
	for _, p := range pods.Items {
		what, _ := granted(p.Name)
		Expect(what).To(Equal([]string{"c=nvidia.com/gpu"}))
		nodes[p.Spec.NodeName] = true
	}
	Expect(nodes).To(HaveLen(2), "one Pod on each one-card node")
})
