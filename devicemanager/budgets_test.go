package devicemanager_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// slicePod is a Pod bound to node that asks for one NVIDIA slice with the given budget keys.
func slicePod(name, node string, keys map[string]string) *corev1.Pod {
	limits := corev1.ResourceList{"nvidia.com/gpu.sliced": resource.MustParse("1")}
	for k, v := range keys {
		limits[corev1.ResourceName("nvidia.com/gpu.sliced."+k)] = resource.MustParse(v)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits}}}},
	}
}

// Reads slice budgets from Pods in a real API server: the waiting Pod recorded on the card handed out, else the
// oldest waiting Pod of the node, is the one being allocated, a percentage is taken of the card's memory, and a
// Pod on another node is not looked at.
var _ = It("reads slice budgets from Pods in a real API server", func() {
	ctx := context.Background()
	nvidia, _ := vendors.Lookup("nvidia")
	sliced := deviceplugin.Resources(nvidia)[2]
	card := providers.Device{Manufacturer: "nvidia", UUID: "GPU-0", MemoryMiB: 24576}
	budgets := deviceplugin.PodBudgets{Reader: suite.Client, Node: "budget-node"}

	if _, err := budgets.Budget(ctx, sliced, card); err == nil || !strings.Contains(err.Error(), "no Pod on node budget-node") {
		Fail(fmt.Sprintf("Without a waiting Pod: error %v, want one saying no Pod waits", err))
	}
	pods := []*corev1.Pod{
		slicePod("other-node", "elsewhere", map[string]string{"memory-mib": "1000"}),
		slicePod("first", "budget-node", map[string]string{"memory-percentage": "20", "cores-percentage": "50"}),
	}
	for _, p := range pods {
		Expect(suite.Client.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { _ = suite.Client.Delete(ctx, p) })
		time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	}
	second := slicePod("second", "budget-node", map[string]string{"memory-mib": "8192"})
	second.Annotations = map[string]string{"device.gpustack.ai/accelerator.allocated": `{"main":["GPU-7"]}`}
	Expect(suite.Client.Create(ctx, second)).To(Succeed())
	DeferCleanup(func() { _ = suite.Client.Delete(ctx, second) })

	got, err := budgets.Budget(ctx, sliced, card)
	if diff := cmp.Diff(deviceplugin.Budget{MemoryMiB: 4915, CoresPercent: 50}, got); diff != "" || err != nil {
		Fail(fmt.Sprintf("The oldest waiting Pod's 20 %% of a 24 GiB card: %v, -want, +got:\n%s", err, diff))
	}

	// The card being handed out names the Pod: the ledger recorded the second Pod on GPU-7, so an allocation of
	// GPU-7 is the second Pod's though the first is older.
	got, err = budgets.Budget(ctx, sliced, providers.Device{Manufacturer: "nvidia", UUID: "GPU-7", MemoryMiB: 24576})
	if diff := cmp.Diff(deviceplugin.Budget{MemoryMiB: 8192, CoresPercent: 100}, got); diff != "" || err != nil {
		Fail(fmt.Sprintf("The Pod recorded on GPU-7: %v, -want, +got:\n%s", err, diff))
	}

	// Once the first Pod's container runs, the next allocation is the second Pod's.
	pods[1].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox", ImageID: "x",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	Expect(suite.Client.Status().Update(ctx, pods[1])).To(Succeed())
	got, err = budgets.Budget(ctx, sliced, card)
	if diff := cmp.Diff(deviceplugin.Budget{MemoryMiB: 8192, CoresPercent: 100}, got); diff != "" || err != nil {
		Fail(fmt.Sprintf("The second Pod's 8192 MiB at full compute: %v, -want, +got:\n%s", err, diff))
	}
	if diff := cmp.Diff([]string{"GPU-7"}, budgets.Cards(ctx, sliced)); diff != "" {
		Fail(fmt.Sprintf("The card the ledger recorded for the second Pod: -want, +got:\n%s", diff))
	}
})
