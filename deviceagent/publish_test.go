package deviceagent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/deviceagent"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var (
	c       client.WithWatch
	skipped string
)

func TestMain(m *testing.M) {
	os.Exit(testenv.EnvtestMain(m, &skipped, func(bin string) []string {
		return []string{testenv.Path("package", "crds"), filepath.Join(bin, "assets", "nfd-crds.yaml")}
	}, func(cfg *rest.Config) (err error) {
		if c, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()}); err != nil {
			return err
		}
		return c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.SystemNamespace}})
	}))
}

func a10g(uuid string, index int32) providers.Device {
	return providers.Device{Manufacturer: "nvidia", Product: "NVIDIA A10G", UUID: uuid, Index: index, MemoryMiB: 24576,
		Cores: 10240, Family: "Ampere", ComputeCapability: "8.6", DriverVersion: "580.159.03", RuntimeVersion: "13.0"}
}

// TestPublish publishes a node's cards three times through a client that counts writes: the first publish
// writes the NodeFeature and the Devices object; publishing the same cards again writes nothing; a new card
// updates both objects. The ledger in status is the worker's: the agent never writes it.
func TestPublish(t *testing.T) {
	if c == nil {
		t.Skip(skipped)
	}
	ctx := context.Background()
	writes := 0
	counting := interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			writes++
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			writes++
			return c.Update(ctx, o, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			writes++
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
	})
	p := &deviceagent.Publisher{Client: counting}
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
		writes = 0
		if err := p.Publish(ctx, "node-a10g", s.devices); err != nil {
			t.Fatal(err)
		}
		nf := &nfdv1alpha1.NodeFeature{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: "node-a10g-gpustack-device-manager"}, nf); err != nil {
			t.Fatal(err)
		}
		d := &workerv1.Devices{}
		if err := c.Get(ctx, client.ObjectKey{Name: "node-a10g"}, d); err != nil {
			t.Fatal(err)
		}
		got := want{Writes: writes, Count: nf.Spec.Labels["acceleratable.feature.gpustack.ai/nvidia-a10g.count"], Ledger: len(d.Status.Groups)}
		for _, g := range d.Spec.Groups {
			got.Cards += len(g.Accelerators)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s\nPublish(...): -want, +got:\n%s", s.reason, diff)
		}
	}
}
