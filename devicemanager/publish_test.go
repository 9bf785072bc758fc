package devicemanager_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestAgent runs the Ginkgo suite of the agent's writes on a real API server (the integration tier).
func TestAgent(t *testing.T) { testenv.RunSuite(t, "device manager suite", &suite) }

var suite testenv.EnvtestSuite

func a10g(uuid string, index int32) providers.Device {
	return providers.Device{Manufacturer: "nvidia", Product: "NVIDIA A10G", UUID: uuid, Index: index, MemoryMiB: 24576,
		Cores: 10240, Family: "Ampere", ComputeCapability: "8.6", DriverVersion: "580.159.03", RuntimeVersion: "13.0"}
}

// Publishes a node's cards three times through a client that counts writes: the first publish
// writes the NodeFeature and the Devices object; publishing the same cards again writes nothing; a new card
// updates both objects. The ledger in status is the worker's: the agent never writes it.
var _ = It("publishes a node's cards three times through a client that counts writes", func() {
	ctx := context.Background()
	counting, writes := testenv.CountWrites(suite.Client)
	p := &devicemanager.Publisher{Client: counting}
	type want struct {
		Writes int
		Count  string
		Cards  int
		Ledger int
	}
	steps := []struct {
		reason  string
		devices []providers.Device
		want    want
	}{
		{"The first publish creates both objects.", []providers.Device{a10g("GPU-a", 0)},
			want{Writes: 2, Count: "1", Cards: 1}},
		{"The same cards again write nothing.", []providers.Device{a10g("GPU-a", 0)},
			want{Writes: 0, Count: "1", Cards: 1}},
		{"A second card updates the labels and the inventory.", []providers.Device{a10g("GPU-a", 0), a10g("GPU-b", 1)},
			want{Writes: 2, Count: "2", Cards: 2}},
	}
	for _, s := range steps {
		writes.Reset()
		Expect(p.Publish(ctx, "node-a10g", s.devices, nil)).To(Succeed())
		nf := &nfdv1alpha1.NodeFeature{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: "node-a10g-gpustack-device-manager"}, nf)).To(Succeed())
		d := &workerv1.Devices{}
		Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "node-a10g"}, d)).To(Succeed())
		got := want{Writes: len(writes.List()), Count: nf.Spec.Labels["acceleratable.feature.gpustack.ai/nvidia-a10g.count"], Ledger: len(d.Status.Groups)}
		for _, g := range d.Spec.Groups {
			got.Cards += len(g.Accelerators)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			Fail(fmt.Sprintf("%s\nPublish(...): -want, +got:\n%s", s.reason, diff))
		}
	}
})
