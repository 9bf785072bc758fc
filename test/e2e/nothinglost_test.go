package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
)

// setSetting patches a Setting's value; "" returns it to its default.
func setSetting(name, value string) {
	GinkgoHelper()
	kubectl("-n", "gpustack-system", "patch", "setting", name, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"value":%q}}`, value))
}

// podUID is the UID of the Instance's Pod in default, "" while there is none.
func podUID(name string) string {
	GinkgoHelper()
	return kubectl("get", "pods", "-n", "default", "--field-selector", "metadata.name="+name, "-o", "jsonpath={.items[*].metadata.uid}")
}

// runReady creates an Instance in default, deleted when the spec ends, waits until it is Ready and returns its
// Pod's UID.
func runReady(inst *workerv1.Instance) string {
	GinkgoHelper()
	Expect(k.Create(context.Background(), inst)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	waitPhase(inst.Name, "Ready")
	return podUID(inst.Name)
}

// A setting flipped and reverted: node-management-manual=true takes gpustack.ai/managed off every node, so every
// pool loses its flavors. Within instance-type-drain-grace-period the pools are only held and the running
// Instance's Pod is the same after the revert; with a grace of 0 the queue drains it, and the Instance starts
// again by itself once the pool is back. In neither does the system write spec.stop.
var _ = DescribeTable("keeps users' work through node-management-manual flipped and reverted",
	func(grace string, drains bool) {
		const name, pool = "kept-demo", genericPool
		// Cleanups run last first: the Instance goes, then the settings return to their defaults and the
		// walkthrough's Step 1 is back.
		DeferCleanup(func() {
			setSetting(workerv1.SettingNodeManagementManual, "")
			setSetting(workerv1.SettingInstanceTypeDrainGracePeriod, "")
			waitTable(step1Types, "get", "instancetype")
		})
		if grace != "" {
			setSetting(workerv1.SettingInstanceTypeDrainGracePeriod, grace)
		}
		inst := builders.MakeInstance("default", name, pool).Obj()
		uid := runReady(inst)

		setSetting(workerv1.SettingNodeManagementManual, "true")
		if drains {
			eventually(2*time.Minute, func() (bool, string) {
				got := podUID(name)
				return got != uid, "the drained queue evicts the Instance's Pod " + uid + ": " + got
			})
		} else {
			eventually(time.Minute, func() (bool, string) {
				got := kubectl("get", "instancetype", pool, "-o", "jsonpath={.status.phase} {.status.noFlavorsSince}")
				return strings.HasPrefix(got, "Inactive 20"), "the pool with no flavors is held, since a time its status says: " + got
			})
			if got := podUID(name); got != uid {
				Fail(fmt.Sprintf("the held pool drains nothing: the Instance's Pod was %s, is %q", uid, got))
			}
		}
		if got := kubectl("get", "instance", name, "-n", "default", "-o", "jsonpath={.spec.stop}"); got != "" && got != "false" {
			Fail(fmt.Sprintf("the system never writes spec.stop, got %q", got))
		}

		setSetting(workerv1.SettingNodeManagementManual, "")
		waitPhase(name, "Ready")
		got := kubectl("get", "instance", name, "-n", "default", "-o", "jsonpath={.spec.stop}")
		Expect(got).To(Or(BeEmpty(), Equal("false")), "spec.stop after the revert")
		if !drains {
			Expect(podUID(name)).To(Equal(uid), "the Pod that ran through the flip")
		}
		eventually(time.Minute, func() (bool, string) {
			got := kubectl("get", "instancetype", pool, "-o", "jsonpath={.status.phase} {.status.noFlavorsSince}")
			return got == "Active ", "the pool is Active again and noFlavorsSince clears: " + got
		})
	},
	Entry("within the grace period: the pool is held, and the same Pod runs on", "", false),
	Entry("grace period 0: the queue drains the Pod, and the Instance starts again by itself", "0s", true),
)

// A pool's labels blink: its nodes' device-manager NodeFeatures are deleted, again and again for 20 seconds,
// and the agents then make them again. NFD takes the cards' labels off, the T4 pool loses its flavors and is
// held (Inactive, noFlavorsSince), but within the drain grace period nothing runs out: the whole-T4 Instance's
// Pod is the same afterwards, and nothing wrote spec.stop.
var _ = It("drains nothing when a pool's labels vanish for 20 seconds", func() {
	ctx := context.Background()
	const name = "blink-t4"
	inst := builders.MakeInstance("default", name, t4Pool).Accelerators(1).Obj()
	uid := runReady(inst)

	key := workerv1.AcceleratablePrefix + "nvidia-tesla-t4"
	var backing []nfdv1alpha1.NodeFeature
	list := &nfdv1alpha1.NodeFeatureList{}
	Expect(k.List(ctx, list, client.InNamespace(workerv1.SystemNamespace))).To(Succeed())
	for _, nf := range list.Items {
		if nf.Spec.Labels[key] == "true" {
			backing = append(backing, nf)
		}
	}
	Expect(backing).NotTo(BeEmpty(), "the NodeFeatures that carry %s", key)
	held := false
	for start := time.Now(); time.Since(start) < 20*time.Second || !held; time.Sleep(time.Second) {
		Expect(time.Since(start)).To(BeNumerically("<", 2*time.Minute), "the T4 pool never lost its flavors")
		for i := range backing {
			_ = k.Delete(ctx, &nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{Namespace: backing[i].Namespace, Name: backing[i].Name}})
		}
		got := kubectl("get", "instancetype", t4Pool, "-o", "jsonpath={.status.phase} {.status.noFlavorsSince}")
		held = held || strings.HasPrefix(got, "Inactive 20")
	}
	// The agents make their NodeFeatures again on their next report.
	eventually(2*time.Minute, func() (bool, string) {
		got := kubectl("get", "instancetype", t4Pool, "-o", "jsonpath={.status.phase} {.status.noFlavorsSince}")
		return got == "Active ", "the T4 pool is Active again and noFlavorsSince clears: " + got
	})
	waitPhase(name, "Ready")
	Expect(podUID(name)).To(Equal(uid), "the Pod that ran through the blink")
	got := kubectl("get", "instance", name, "-n", "default", "-o", "jsonpath={.spec.stop}")
	Expect(got).To(Or(BeEmpty(), Equal("false")), "spec.stop after the blink")
})

// A real node's kubelet restarted as a crash would (killed, started again), its containers running on, then the
// node rebooted (every process of it killed at once, containers included, what it keeps in memory lost), under
// a running Instance. After the kubelet's restart the whole-T4 Instance on it is Ready on the same Pod, and the
// node's cards are allocatable again (the device managers register with the new kubelet). After the reboot the
// Instance is Ready again with no one acting, and nothing wrote spec.stop. That a failed Pod is built again at
// any age of its Instance (once, an Instance older than five minutes was left failed for good) is the instance
// controller suite's "is rebuilt at any age", on a clock a day ahead: waiting five real minutes here added
// nothing to it.
var _ = It("keeps an Instance Ready through its node's kubelet restarted and the node rebooted", func() {
	ctx := context.Background()
	const name = "long-lived"
	inst := builders.MakeInstance("default", name, t4Pool).Accelerators(1).Obj()
	uid := runReady(inst)
	node := kubectl("get", "pod", name, "-n", "default", "-o", "jsonpath={.spec.nodeName}")
	allocatable := kubectl("get", "node", node, "-o", "jsonpath={.status.allocatable}")
	// nodeBack waits until the node's kubelet started after since has reported it Ready with its cards
	// allocatable: a kubelet reports its node's status as it starts, so an older heartbeat is the last one's.
	nodeBack := func(since time.Time) {
		GinkgoHelper()
		eventually(2*time.Minute, func() (bool, string) {
			ready := kubectl("get", "node", node, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}`)
			status, beat, _ := strings.Cut(ready, " ")
			at, err := time.Parse(time.RFC3339, beat)
			now := kubectl("get", "node", node, "-o", "jsonpath={.status.allocatable}")
			return status == "True" && err == nil && !at.Before(since.Truncate(time.Second)) && now == allocatable,
				node + " Ready (heartbeat): " + ready + ", since " + since.Format(time.RFC3339) + "; allocatable: " + now + ", was " + allocatable
		})
	}
	restarted := time.Now()
	Expect(cluster.RestartKubelet(ctx, node)).To(Succeed())
	nodeBack(restarted)
	waitPhase(name, "Ready")
	Expect(podUID(name)).To(Equal(uid), "the Pod that ran through the kubelet's restart")
	restarts := kubectl("get", "pod", name, "-n", "default", "-o", "jsonpath={.status.containerStatuses[*].restartCount}")
	Expect(strings.Fields(restarts)).To(HaveEach("0"), "the containers ran on through the kubelet's restart")

	rebooted := time.Now()
	Expect(cluster.RebootNode(ctx, node)).To(Succeed())
	// The kubelet that boots admits the Pod again before the device managers have registered their plugins, so
	// it usually refuses it (UnexpectedAdmissionError: no healthy devices) and the Instance builds it again;
	// had the plugins come first, the same Pod would run with its containers started again. Until the booted
	// kubelet reports, the API server still says what the node said before (Ready, the Pod running, no
	// restart): wait for the Pod to show the reboot, either way, before the node and the Instance are read.
	eventually(3*time.Minute, func() (bool, string) {
		now := podUID(name)
		again := strings.Fields(kubectl("get", "pods", "-n", "default", "--field-selector", "metadata.name="+name, "-o",
			"jsonpath={.items[*].status.containerStatuses[*].restartCount}"))
		return now != "" && (now != uid || len(again) > 0 && !slices.Contains(again, "0")),
			fmt.Sprintf("Pod %s (was %s) rebuilt, or its containers started again after the reboot: restarts %v", now, uid, again)
	})
	nodeBack(rebooted)
	waitPhase(name, "Ready")
	if now := podUID(name); now != uid {
		// The rebuild count ends with the Ready Pod; the event stays.
		events := kubectl("get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Instance,involvedObject.name="+name+",reason=PodRebuilt",
			"-o", "jsonpath={.items[*].message}")
		Expect(events).To(ContainSubstring("the Pod failed ("), "the Instance's PodRebuilt event says why Pod %s, failed by the reboot, was built again", uid)
	}
	got := kubectl("get", "instance", name, "-n", "default", "-o", "jsonpath={.spec.stop}")
	Expect(got).To(Or(BeEmpty(), Equal("false")), "spec.stop after the kubelet's restart and the reboot")
})

// A crafted label: a NodeFeature of its own makes node-cpu claim two billion T4 cards. Its Devices inventory
// (it has none) does not back them, so the node is left out of every pool with an event naming the label: the
// T4 pool's quota stays, the generic pool loses node-cpu's 16 cores, the node shows a condition, and the
// worker's memory does not grow with the claimed count.
var _ = It("leaves out a CPU node whose labels claim two billion cards, and grows no memory for them", func() {
	ctx := context.Background()
	rss := func() float64 {
		GinkgoHelper()
		url, err := leaderMetricsURL()
		Expect(err).NotTo(HaveOccurred())
		return e2esuite.Scrape(url, "process_resident_memory_bytes", nil)
	}
	quota := func() string {
		GinkgoHelper()
		return kubectl("get", "clusterqueue", t4Pool, "-o", "jsonpath={.spec.resourceGroups}")
	}
	before, rssBefore := quota(), rss()
	key := workerv1.AcceleratablePrefix + "nvidia-tesla-t4"
	nf := &nfdv1alpha1.NodeFeature{
		ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "node-cpu-crafted",
			Labels: map[string]string{nfdv1alpha1.NodeFeatureObjNodeNameLabel: "node-cpu"}},
		Spec: nfdv1alpha1.NodeFeatureSpec{Labels: map[string]string{key: "true", key + ".count": "2000000000"}},
	}
	Expect(k.Create(ctx, nf)).To(Succeed())
	DeferCleanup(func() {
		_ = k.Delete(context.Background(), nf)
		waitTable(step1Types, "get", "instancetype")
		eventually(time.Minute, func() (bool, string) {
			got := kubectl("get", "node", "node-cpu", "-o", `jsonpath={.status.conditions[?(@.type=="GPUStackInventoryDisagrees")].status}`)
			return got == "", "node-cpu's condition clears: " + got
		})
	})
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "events", "-n", "default", "--field-selector", "involvedObject.name=node-cpu,reason=InventoryDisagrees",
			"-o", "jsonpath={.items[*].message}")
		return strings.Contains(got, key+".count=2000000000 claims cards, and the node has no Devices inventory"), "node-cpu's events: " + got
	})
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "node", "node-cpu", "-o", `jsonpath={.status.conditions[?(@.type=="GPUStackInventoryDisagrees")].status}`)
		return got == "True", "node-cpu's GPUStackInventoryDisagrees condition: " + got
	})
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "instancetype", genericPool, "-o", "jsonpath={.status.summary.cpu}")
		return got == "48/56", "the generic pool without node-cpu: " + got
	})
	Expect(quota()).To(Equal(before), "the T4 pool's quota")
	grown := rss() - rssBefore
	Expect(grown).To(BeNumerically("<", 10<<20), "the worker's RSS grew by %.1f MiB", grown/(1<<20))
})

// The worker scaled to 0: the product's webhooks fail closed for what is sent to its entrance queues, and leave
// every other team's Kueue work alone. A Pod and a Job labelled for a queue that is none of the product's are
// created while no worker replica answers; a Pod sent to an entrance queue is refused, naming the webhook.
var _ = It("lets another team's Kueue work in while no worker replica answers", func() {
	ctx := context.Background()
	deploy := []string{"-n", localcluster.ChartNamespace, "deployment", "gpustack-operator-worker"}
	replicas := kubectl(append([]string{"get"}, append(deploy, "-o", "jsonpath={.spec.replicas}")...)...)
	kubectl(append([]string{"scale"}, append(deploy, "--replicas=0")...)...)
	DeferCleanup(func() {
		kubectl(append([]string{"scale"}, append(deploy, "--replicas="+replicas)...)...)
		kubectl("-n", localcluster.ChartNamespace, "rollout", "status", "deployment/gpustack-operator-worker", "--timeout=3m")
		waitAdmitsInstances()
	})
	eventually(2*time.Minute, func() (bool, string) {
		got := workerPods()
		return len(got) == 0, fmt.Sprintf("worker Pods left: %v", got)
	})

	other := map[string]string{workerv1.LabelQueueName: "team-b-queue"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "team-b-pod", Labels: other},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: realnode.UserImage, Command: []string{"sleep", "infinity"}}}}}
	Expect(k.Create(ctx, pod)).To(Succeed(), "a Pod for another team's queue")
	DeferCleanup(func() { _ = k.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "team-b-job", Labels: other},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: realnode.UserImage, Command: []string{"true"}}}}}}}
	Expect(k.Create(ctx, job)).To(Succeed(), "a Job for another team's queue")
	DeferCleanup(func() {
		_ = k.Delete(context.Background(), job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})

	ours := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "entrance-pod",
		Labels: map[string]string{workerv1.LabelQueueName: pools.EntranceName(genericPool)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: realnode.UserImage, Command: []string{"sleep", "infinity"}}}}}
	err := k.Create(ctx, ours, client.DryRunAll)
	Expect(err).To(MatchError(ContainSubstring("pods.worker.gpustack.ai")), "a Pod sent to an entrance queue waits on the worker")
})

// A Pod stranded by its labels: Kueue admits an Instance pinned to node-cpu's flavor, and the per-card check pins
// it there, while node-cpu is cordoned, so the Pod waits for the scheduler. The node then leaves the pools
// (gpustack.ai/managed=false on its worker NodeFeature, as an administrator does): the Pod's node selector, the
// flavor's labels, matches no node any more and would wait for good. The Instance builds it again (a PodRebuilt
// event naming the cause) and, once the node is back and uncordoned, is Ready.
var _ = It("builds again an admitted Pod whose node labels changed before it was scheduled", func() {
	const name, node = "stranded-cpu", "node-cpu"
	// Cleanups run last first: the Instance goes, then the node is back and the walkthrough's Step 1 with it.
	DeferCleanup(func() {
		setManaged(node, "true")
		kubectl("uncordon", node)
		waitTable(step1Types, "get", "instancetype")
	})
	kubectl("cordon", node)
	inst := builders.MakeInstance("default", name, genericPool).NodeName(node).Obj()
	Expect(k.Create(context.Background(), inst)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	eventually(2*time.Minute, func() (bool, string) {
		got := kubectl("get", "pods", "-n", "default", "--field-selector", "metadata.name="+name, "-o",
			`jsonpath={.items[*].spec.schedulingGates} {.items[*].status.conditions[?(@.type=="PodScheduled")].reason}`)
		return got == " Unschedulable", "the Pod admitted and waiting for the cordoned node (gates, PodScheduled reason): " + got
	})
	uid := podUID(name)

	setManaged(node, "false")
	eventually(2*time.Minute, func() (bool, string) {
		got := kubectl("get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Instance,involvedObject.name="+name+",reason=PodRebuilt",
			"-o", "jsonpath={.items[*].message}")
		return strings.Contains(got, "its node selector matches no node"), "the Instance's PodRebuilt event: " + got
	})
	Expect(podUID(name)).NotTo(Equal(uid), "the stranded Pod is gone")

	setManaged(node, "true")
	kubectl("uncordon", node)
	waitPhase(name, "Ready")
	got := kubectl("get", "instance", name, "-n", "default", "-o", "jsonpath={.spec.stop}")
	Expect(got).To(Or(BeEmpty(), Equal("false")), "spec.stop")
})
