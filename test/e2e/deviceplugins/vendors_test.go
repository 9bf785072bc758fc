package deviceplugins

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
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

// running waits until the Pod runs: its node's kubelet started its containers, which it does only once the
// node's plugins allocated every device the Pod asks. A Pod the kubelet rejected (a plugin refused) fails the
// spec at once with the kubelet's reason.
func running(name string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{}
	Eventually(func(g Gomega) {
		g.Expect(suite.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, pod)).To(Succeed())
		if pod.Status.Phase == corev1.PodFailed {
			StopTrying(fmt.Sprintf("pod %s on %s was rejected: %s: %s", name, pod.Spec.NodeName, pod.Status.Reason, pod.Status.Message)).Now()
		}
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "pod %s (node %q, gates %v, conditions %v, containers %v)",
			name, pod.Spec.NodeName, pod.Spec.SchedulingGates, pod.Status.Conditions, pod.Status.ContainerStatuses)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return pod
}

// environ is the environment a container's processes get, what the plugins' Allocate added included, as env
// prints it in the container.
func environ(pod, container string) map[string]string {
	GinkgoHelper()
	return parseEnv(suite.Kubectl("exec", pod, "-n", "default", "-c", container, "--", "env"))
}

// sidecarEnviron is the environment the runtime started an Instance's SSH sidecar with, whose image holds no
// env (and whose sshd overwrites its own /proc/<pid>/environ with its title): read from the container's OCI
// spec, which the node's containerd keeps under its state directory, as the kubelet asked for it with what
// the plugins' Allocate added.
func sidecarEnviron(pod *corev1.Pod) map[string]string {
	GinkgoHelper()
	var id string
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == instancepod.SSHContainer {
			id = strings.TrimPrefix(c.ContainerID, "containerd://")
		}
	}
	Expect(id).NotTo(BeEmpty(), "pod %s has no %s container yet", pod.Name, instancepod.SSHContainer)
	root, err := suite.Cluster.NodeRoot(pod.Spec.NodeName)
	Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join(root, "run", "containerd", "io.containerd.runtime.v2.task", "k8s.io", id, "config.json"))
	Expect(err).NotTo(HaveOccurred(), "the OCI spec of pod %s's %s container", pod.Name, instancepod.SSHContainer)
	var spec struct {
		Process struct {
			Env []string `json:"env"`
		} `json:"process"`
	}
	Expect(json.Unmarshal(data, &spec)).To(Succeed())
	return parseEnv(strings.Join(spec.Process.Env, "\n"))
}

// parseEnv splits NAME=value lines.
func parseEnv(out string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// cardMemoryMiB is the memory of one card of the node as its agent's ledger (the Devices object) states it.
func cardMemoryMiB(node string) int64 {
	GinkgoHelper()
	out := suite.Kubectl("get", "devices", node, "-o", "jsonpath={.spec.groups[0].memory}")
	mib, err := strconv.ParseInt(out, 10, 64)
	Expect(err).NotTo(HaveOccurred(), "node %s's card memory %q", node, out)
	return mib
}

// sharePod is a bare Pod asking one share of a card of the pool, queued at its entrance LocalQueue.
func sharePod(name string, v vendors.Vendor, pool string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"kueue.x-k8s.io/queue-name": pools.EntranceName(pool)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: realnode.UserImage, Command: []string{"sleep", "infinity"},
			Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceName(v.ResourceName + ".shared"): resource.MustParse("1"),
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
	}
}

// enforcerDebug runs a dynamically linked program in the container at every vendor's enforcer debug level, so
// the enforcer its ld.so.preload loads says the budget it was given (the stand-in's line, on standard error).
const enforcerDebug = "env LIBCUDA_LOG_LEVEL=4 LIBHGGC_LOG_LEVEL=4 ENPU_LOG_LEVEL=4 VROCM_LOG_LEVEL=4 true 2>&1"

// Each vendor's node holds three cards. An Instance of a whole card, a bare Pod of a share and, where the vendor's
// slices are enforced, an Instance of a slice are admitted by Kueue and the per-card check, bound, and then
// allocated by the node's plugins: every one must be granted, with what the container needs to use it. Where
// the vendor's slices are not enforced, the slice is refused at create, naming why.
var _ = DescribeTable("grants through the device plugins what Kueue admits",
	func(vendor, pool, prefix string) {
		v, ok := vendors.Lookup(vendor)
		Expect(ok).To(BeTrue())
		it := poolOf(pool)
		visibility := deviceplugin.VisibilityEnv(vendor)

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

		whole := running(prefix + "-whole")
		main := environ(prefix+"-whole", instancepod.MainContainer)
		Expect(main).To(HaveKeyWithValue(visibility, Not(BeEmpty())), "the whole card is made visible to main")
		Expect(sidecarEnviron(whole)).To(HaveKeyWithValue(visibility, main[visibility]), "the SSH sidecar sees main's card")

		running(prefix + "-share")
		Expect(environ(prefix+"-share", "c")).To(HaveKeyWithValue(visibility, Not(BeEmpty())), "the share's card is made visible")

		if v.SlicesPerCard == 0 {
			return
		}
		pod := running(prefix + "-slice")
		main = environ(prefix+"-slice", instancepod.MainContainer)
		Expect(main).To(HaveKey(visibility))
		// The container started, so every library Allocate mounts was on the node (the agent copied the enforcer
		// image there), and each dynamically linked process preloads it, with the slice's budget.
		budget := strconv.FormatInt(cardMemoryMiB(pod.Spec.NodeName)*25/100, 10) + "m"
		out := suite.Kubectl("exec", prefix+"-slice", "-n", "default", "-c", instancepod.MainContainer, "--", "sh", "-c", enforcerDebug)
		Expect(out).To(ContainSubstring("[gpustack enforcer stand-in] devices "+main[visibility]+" memory "+budget+" "),
			"the %s slice's enforcer is loaded with its budget", v.DisplayName)
	},
	Entry("NVIDIA", "nvidia", "gpustack--nvidia-l40s-linux-amd64", "nvidia"),
	Entry("AMD", "amd", "gpustack--amd-instinct-mi300x-linux-amd64", "amd"),
	Entry("Huawei Ascend", "ascend", "gpustack--ascend-910b3-linux-amd64", "ascend"),
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
	running("a30-mig")
	Expect(environ("a30-mig", instancepod.MainContainer)).To(HaveKeyWithValue("NVIDIA_VISIBLE_DEVICES", HavePrefix("MIG-")))
	poolKey("3")
	Expect(suite.Client.Delete(context.Background(), inst)).To(Succeed())
	poolKey("4")
})

// A Job of two Pods of one whole card each, on a pool of two one-card nodes: Kueue admits its one Workload,
// the per-card check places its Pods on the two nodes, and each node's plugin grants its card.
var _ = It("admits a Job of parallelism 2 on two one-card nodes", func() {
	create(pairJob("pair", poolOf(l4).Name))
	pairRunsOnTwoNodes("pair")
})

// pairJob is a Job of two Pods of one whole card each, queued at the pool's entrance LocalQueue.
func pairJob(name, pool string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"kueue.x-k8s.io/queue-name": pools.EntranceName(pool)}},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: "c", Image: realnode.UserImage, Command: []string{"sleep", "infinity"}, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}},
	}
}

// pairRunsOnTwoNodes waits until both Pods of the Job run, and checks that each sees its own card, on a node
// of its own.
func pairRunsOnTwoNodes(job string) {
	GinkgoHelper()
	var pods corev1.PodList
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		if err := suite.Client.List(context.Background(), &pods, client.InNamespace("default"), client.MatchingLabels{"batch.kubernetes.io/job-name": job}); err != nil {
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
		Expect(environ(p.Name, "c")).To(HaveKeyWithValue("NVIDIA_VISIBLE_DEVICES", HavePrefix("GPU-")), "pod %s's card", p.Name)
		nodes[p.Spec.NodeName] = true
	}
	Expect(nodes).To(HaveLen(2), "one Pod on each one-card node")
}

// slicePod is a bare Pod of the pool whose container c asks for a slice of mib MiB, after init.
func slicePod(name, pool, mib string, init ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"kueue.x-k8s.io/queue-name": pools.EntranceName(pool)}},
		Spec: corev1.PodSpec{InitContainers: init, Containers: []corev1.Container{{Name: "c", Image: realnode.UserImage, Command: []string{"sleep", "infinity"},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu.sliced": resource.MustParse("1"),
				"nvidia.com/gpu.sliced.memory-mib": resource.MustParse(mib), corev1.ResourceCPU: resource.MustParse("500m"),
				corev1.ResourceMemory: resource.MustParse("512Mi")}}}}},
	}
}

// Two slices of one L40S, of 1024 and 2048 MiB, in two Pods: the first is allocated but its container does not
// start (its init container waits), so from the API server alone it would still look like the container being
// allocated when the second Pod is. The kubelet, whose Allocate names only devices, says through its
// pod-resources API that the first already holds its slice, so the second's enforcer gets the second's budget.
var _ = It("gives a slice its own budget while another allocated slice of the card has not started", func() {
	it := poolOf("gpustack--nvidia-l40s-linux-amd64")
	wait := corev1.Container{Name: "wait", Image: realnode.UserImage, Command: []string{"sleep", "infinity"}}
	create(slicePod("slice-waiting", it.Name, "1024", wait))
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		got := suite.Kubectl("get", "pod", "slice-waiting", "-n", "default", "-o", "jsonpath={.status.initContainerStatuses[0].state.running.startedAt}")
		return got != "", "slice-waiting's init container has not started"
	})
	create(slicePod("slice-second", it.Name, "2048"))
	running("slice-second")
	allocated := func(pod string) string {
		return suite.Kubectl("get", "pod", pod, "-n", "default", "-o", `jsonpath={.metadata.annotations.device\.gpustack\.ai/accelerator\.allocated}`)
	}
	Expect(allocated("slice-second")).To(Equal(allocated("slice-waiting")), "both slices were placed on one card")
	out := suite.Kubectl("exec", "slice-second", "-n", "default", "-c", "c", "--", "sh", "-c", enforcerDebug)
	Expect(out).To(ContainSubstring(" memory 2048m "), "the second slice's enforcer is loaded with its own budget")
})
