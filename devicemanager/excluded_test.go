package devicemanager_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin/deviceplugintest"
)

func TestParseExcludedDevices(t *testing.T) {
	cases := map[string]struct {
		reason  string
		data    string
		want    map[string]bool
		wantErr bool
	}{
		"Empty": {reason: "An empty file leaves nothing out.", want: map[string]bool{}},
		"UUIDs": {reason: "One UUID a line; comments and blank lines are skipped.",
			data: "# reserved for the display\nGPU-a\n\n  GPU-b  # flaky since March\n", want: map[string]bool{"GPU-a": true, "GPU-b": true}},
		"TwoWords": {reason: "A line of two words is an error: the administrator meant something else.",
			data: "GPU-a\nGPU-b GPU-c\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := devicemanager.ParseExcludedDevices([]byte(tc.data))
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nParseExcludedDevices(...): error %v, want error %t", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nParseExcludedDevices(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestExcludedDevicesPath: GPUSTACK_CONF_DIR moves the file, seen through the node's root.
func TestExcludedDevicesPath(t *testing.T) {
	cases := map[string]struct {
		reason string
		value  string
		want   string
	}{
		"Unset": {reason: "The default directory.", want: "/host/etc/gpustack/excluded-devices"},
		"Set":   {reason: "The variable's directory.", value: "/opt/gpustack/conf", want: "/host/opt/gpustack/conf/excluded-devices"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := devicemanager.ExcludedDevicesPath(func(k string) string {
				if k == devicemanager.EnvConfDir {
					return tc.value
				}
				return ""
			}, devicemanager.HostRoot)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nExcludedDevicesPath(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// An administrator takes a card of the node out of service by listing it in the node's excluded-devices file
// (GPUSTACK_CONF_DIR/excluded-devices): at the next detection the agent neither publishes nor serves it. A file
// that cannot be read as one UUID a line keeps out what was out; once the file is gone the card is back.
var _ = It("leaves out the cards the node's excluded-devices file lists", func(ctx context.Context) {
	dir, err := os.MkdirTemp("", "excluded")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = os.RemoveAll(dir) })
	kubelet, err := deviceplugintest.StartKubelet(dir)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(kubelet.Stop)
	file := filepath.Join(dir, devicemanager.ExcludedDevicesFile)
	Expect(os.WriteFile(file, []byte("# flaky since March\nGPU-excluded-1\n"), 0o644)).To(Succeed())

	a := &devicemanager.Agent{Node: "node-excluded", Provider: cardsOf{a10g("GPU-excluded-0", 0), a10g("GPU-excluded-1", 1)},
		Client: suite.Client, Interval: 200 * time.Millisecond, PluginDir: dir, PluginCheck: 100 * time.Millisecond, Log: logr.Discard(),
		ExcludedDevices: file, Runtime: deviceplugin.Runtime{LibDir: "/var/lib/gpustack/operator/lib", StateDir: GinkgoT().TempDir()}}
	runAgent(a)
	// published is what the Devices object and the kubelet's whole-card capacity say of the node's cards.
	published := func() string {
		d := &workerv1.Devices{}
		if err := suite.Client.Get(ctx, client.ObjectKey{Name: a.Node}, d); err != nil {
			return err.Error()
		}
		var ids []string
		for _, g := range d.Spec.Groups {
			for _, c := range g.Accelerators {
				ids = append(ids, c.ID)
			}
		}
		return fmt.Sprintf("%v capacity %d", ids, kubelet.Capacity()["nvidia.com/gpu"])
	}
	Eventually(published).WithTimeout(10 * time.Second).Should(Equal("[GPU-excluded-0] capacity 1"))

	Expect(os.WriteFile(file, []byte("GPU-excluded-1 GPU-excluded-0\n"), 0o644)).To(Succeed())
	Consistently(published).WithTimeout(time.Second).Should(Equal("[GPU-excluded-0] capacity 1"), "a bad file keeps out what was out")

	Expect(os.Remove(file)).To(Succeed())
	Eventually(published).WithTimeout(10 * time.Second).Should(Equal("[GPU-excluded-0 GPU-excluded-1] capacity 2"))
})
