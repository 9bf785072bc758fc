package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
)

// roomByCount reports whether node has room for pod by the scheduler's own count: for each extended resource the
// pod asks, the node's allocatable less what its other Pods ask. The scheduler sees no cards, only these sums.
func roomByCount(ctx context.Context, node string, pod *corev1.Pod) (bool, string) {
	GinkgoHelper()
	n := &corev1.Node{}
	Expect(k.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
	pods := &corev1.PodList{}
	Expect(k.List(ctx, pods, client.MatchingFields{"spec.nodeName": node})).To(Succeed())
	var report []string
	for name, want := range pod.Spec.Containers[0].Resources.Limits {
		if !strings.Contains(string(name), "/") {
			continue
		}
		free := n.Status.Allocatable[name].DeepCopy()
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, c := range p.Spec.Containers {
				free.Sub(c.Resources.Limits[name])
			}
		}
		report = append(report, fmt.Sprintf("%s: %s free, %s asked", name, free.String(), want.String()))
		if free.Cmp(want) < 0 {
			return false, strings.Join(report, "; ")
		}
	}
	return len(report) > 0, strings.Join(report, "; ")
}

// workload-fit-affinity on the T4 pool: node-t4-b's four cards each carry a 60 % slice, so only node-t4-a's one
// card has room for another, while node-t4-b still has room by the scheduler's count (its slices summed over
// its cards) and is the bigger node. true: the per-card check pins the Workload to node-t4-a and its Pod runs
// there; false: the check still waits for a card with room, but the Pod carries no pin, and where it runs is
// the scheduler's choice alone. One spec, since every spec starts from an idle Step 1.
var _ = It("pins a Workload to the node whose card fits it while workload-fit-affinity is true, and not while false", func() {
	ctx := context.Background()
	for i := range 4 {
		inst := builders.MakeInstance("default", fmt.Sprintf("fit-full-%d", i), t4Pool).Slice(60, 100).NodeName("node-t4-b").Obj()
		Expect(k.Create(ctx, inst)).To(Succeed())
		DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	}
	for i := range 4 {
		waitPhase(fmt.Sprintf("fit-full-%d", i), "Ready")
	}

	By("true: the Pod is pinned to the node whose card has room")
	pinned := builders.MakeInstance("default", "fit-pinned", t4Pool).Slice(60, 100).Obj()
	Expect(k.Create(ctx, pinned)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), pinned) })
	waitPhase(pinned.Name, "Ready")
	pod := &corev1.Pod{}
	Expect(k.Get(ctx, client.ObjectKey{Namespace: "default", Name: pinned.Name}, pod)).To(Succeed())
	Expect(pod.Spec.NodeSelector).To(HaveKeyWithValue("kubernetes.io/hostname", "node-t4-a"), "the check's pin")
	Expect(pod.Spec.NodeName).To(Equal("node-t4-a"))
	room, why := roomByCount(ctx, "node-t4-b", pod)
	Expect(room).To(BeTrue(), "node-t4-b has room by the scheduler's count, though none of its cards has: %s", why)
	Expect(k.Delete(ctx, pinned)).To(Succeed())
	eventually(2*time.Minute, func() (bool, string) {
		left := kubectl("get", "pods,workloads", "-n", "default", "-o", "name")
		return !strings.Contains(left, "fit-pinned"), "fit-pinned's Pod and Workload still there:\n" + left
	})

	By("false: the verdict still waits for a card with room, and pins nothing")
	DeferCleanup(setSetting, workerv1.SettingWorkloadFitAffinity, "")
	setSetting(workerv1.SettingWorkloadFitAffinity, "false")
	unpinned := builders.MakeInstance("default", "fit-unpinned", t4Pool).Slice(60, 100).Obj()
	Expect(k.Create(ctx, unpinned)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), unpinned) })
	eventually(2*time.Minute, func() (bool, string) {
		out := kubectl("get", "workloads", "-n", "default", "-o",
			`jsonpath={range .items[?(@.metadata.ownerReferences[0].name=="fit-unpinned")]}{.status.admissionChecks[*].message}{end}`)
		return strings.Contains(out, "fits on node node-t4-a (not pinned there: workload-fit-affinity is false)"), "the verdict: " + out
	})
	eventually(2*time.Minute, func() (bool, string) {
		err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: unpinned.Name}, pod)
		return err == nil, fmt.Sprintf("the Instance's Pod: %v", err)
	})
	Expect(pod.Spec.NodeSelector).NotTo(HaveKey("kubernetes.io/hostname"), "no pin")
})
