package devicemanager_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin/deviceplugintest"
)

// The kubelet allocates a Pod's devices when it admits it, and its Allocate names only devices. A first Pod's
// slice is allocated and its container has not started (its image still pulls) when a second Pod's slice of
// the same card is. Asked through its pod-resources API which containers hold a slice already
// (GPUSTACK_DEVICE_PLUGIN_IDENTIFY_BY_KUBELET, on by default), the kubelet says the first does, and the second
// slice gets its own budget; from the API server alone the first Pod still looks like the one being
// allocated, and the second slice gets the first one's budget.
var _ = DescribeTable("tells which Pod an allocation is for",
	func(ctx context.Context, name string, byKubelet bool, want []string) {
		dir, err := os.MkdirTemp("", "identify")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = os.RemoveAll(dir) })
		kubelet, err := deviceplugintest.StartKubelet(dir)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(kubelet.Stop)
		socket := filepath.Join(dir, "pod-resources.sock")
		stop, err := kubelet.ServePodResources(socket)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)

		card := a10g("GPU-"+name, 0)
		libs := GinkgoT().TempDir()
		enforcer := deviceplugin.Enforcers["nvidia"]
		Expect(os.MkdirAll(filepath.Join(libs, enforcer.Dir(card)), 0o755)).To(Succeed())
		for _, f := range enforcer.Files() {
			Expect(os.WriteFile(filepath.Join(libs, enforcer.Dir(card), f), nil, 0o644)).To(Succeed())
		}
		node := "node-" + name
		a := &devicemanager.Agent{Node: node, Provider: cardsOf{card}, Client: suite.Client, Interval: time.Hour, PluginDir: dir,
			PluginCheck: 100 * time.Millisecond, Log: logr.Discard(), Runtime: deviceplugin.Runtime{LibDir: libs, StateDir: GinkgoT().TempDir()}}
		if byKubelet {
			a.PodResources = socket
		}
		runAgent(a)
		Eventually(a.Ready).WithTimeout(10 * time.Second).Should(Succeed())

		var got []string
		for _, p := range []*corev1.Pod{slicePod(name+"-first", node, map[string]string{"memory-mib": "1024"}),
			slicePod(name+"-second", node, map[string]string{"memory-mib": "2048"})} {
			Expect(suite.Client.Create(ctx, p)).To(Succeed())
			DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
			time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
			grants, err := kubelet.Admit(ctx, p)
			Expect(err).NotTo(HaveOccurred())
			Expect(grants).To(HaveLen(1))
			got = append(got, grants[0].Response.Envs["CUDA_DEVICE_MEMORY_LIMIT_0"])
		}
		Expect(got).To(Equal(want))
	},
	Entry("asking the kubelet", "by-kubelet", true, []string{"1024m", "2048m"}),
	Entry("from the API server alone", "by-api-server", false, []string{"1024m", "1024m"}),
)
