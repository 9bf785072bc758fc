package devicemanager_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"os"
	"sort"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin/deviceplugintest"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// cardsOf is a provider of fixed cards.
type cardsOf []providers.Device

func (c cardsOf) Name() string                                       { return "fixed" }
func (c cardsOf) Detect(context.Context) ([]providers.Device, error) { return c, nil }

// runAgent runs the agent until the spec ends, then removes the Devices object it published.
func runAgent(a *devicemanager.Agent) {
	GinkgoHelper()
	DeferCleanup(func() {
		_ = suite.Client.Delete(context.Background(), &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: a.Node}})
	})
	// Cleanups run last first: the agent stops before its Devices object is deleted.
	testenv.RunUntilCleanup(a.Run)
}

// Runs a node's agent against a kubelet's registration service, admits Pods through its plugins as the
// kubelet's device manager does, and restarts the kubelet under it: the kubelet removes every socket and
// forgets every plugin, and the agent registers all of them again on its own, which its readiness follows.
var _ = It("serves its device plugins to the kubelet, and registers them again when the kubelet starts again", func(ctx context.Context) {
	// A short directory: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "agent")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = os.RemoveAll(dir) })
	kubelet, err := deviceplugintest.StartKubelet(dir)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(kubelet.Stop)

	a := &devicemanager.Agent{Node: "node-restart", Provider: cardsOf{a10g("GPU-restart-0", 0)}, Client: suite.Client,
		Interval: time.Hour, PluginDir: dir, PluginCheck: 100 * time.Millisecond, Log: logr.Discard(),
		Runtime: deviceplugin.Runtime{LibDir: "/var/lib/gpustack/operator/lib", StateDir: GinkgoT().TempDir()}}
	Expect(a.Ready()).To(MatchError(ContainSubstring("the cards of node node-restart are not published yet")))
	runAgent(a)

	resources := func() []string {
		var names []string
		for name := range kubelet.Registered() {
			names = append(names, name)
		}
		sort.Strings(names)
		return names
	}
	want := []string{"device.gpustack.ai/nvidia.visibility", "nvidia.com/gpu", "nvidia.com/gpu.partitioned", "nvidia.com/gpu.shared", "nvidia.com/gpu.sliced"}
	Eventually(resources).WithTimeout(10 * time.Second).Should(Equal(want))
	Eventually(a.Ready).WithTimeout(10 * time.Second).Should(Succeed())

	// What the kubelet's device manager does with a Pod: one whole card to the first Pod, with the card made
	// visible; none left for a second.
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}}
	}
	grants, err := kubelet.Admit(ctx, pod("first"))
	Expect(err).NotTo(HaveOccurred())
	Expect(grants).To(HaveLen(1))
	Expect(grants[0].DeviceIDs).To(Equal([]string{"GPU-restart-0"}))
	Expect(grants[0].Response.Envs).To(HaveKeyWithValue("NVIDIA_VISIBLE_DEVICES", "GPU-restart-0"))
	_, err = kubelet.Admit(ctx, pod("second"))
	Expect(err).To(MatchError(ContainSubstring("requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0")))
	kubelet.Release("first")
	_, err = kubelet.Admit(ctx, pod("second"))
	Expect(err).NotTo(HaveOccurred(), "the card is free again once the first Pod is gone")

	Expect(kubelet.Restart()).To(Succeed())
	Expect(kubelet.Registered()).To(BeEmpty(), "the kubelet forgot every plugin")
	Eventually(resources).WithTimeout(10*time.Second).Should(Equal(want), "every plugin registered again")
	Eventually(a.Ready).WithTimeout(10 * time.Second).Should(Succeed())
})
