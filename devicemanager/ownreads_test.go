package devicemanager_test

import (
	"context"
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/providers"
)

// roundTripperFunc is a function as an http.RoundTripper.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An agent reads its node's own Devices object and NodeFeature from a watch of them: publishing the same cards
// again sends the API server no request at all, a changed card patches both objects and nothing more, and an
// object someone deleted is made again at the next publish.
var _ = It("publishes unchanged cards without a request, reading the node's own objects from a watch", func(ctx context.Context) {
	const node = "node-own-reads"
	var mu sync.Mutex
	var requests []string
	cfg := rest.CopyConfig(suite.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Query().Get("watch") != "true" {
				mu.Lock()
				requests = append(requests, r.Method+" "+r.URL.Path)
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	}
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := requests
		requests = nil
		return out
	}
	watchCtx, stop := context.WithCancel(context.Background())
	DeferCleanup(stop)
	c, err := devicemanager.OwnReads(watchCtx, cfg, scheme.New(), node)
	Expect(err).NotTo(HaveOccurred())
	feature := client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: workerv1.NodeFeatureName(node, workerv1.NodeFeatureDeviceManager)}
	DeferCleanup(func(ctx context.Context) {
		for _, o := range []client.Object{&workerv1.Devices{}, &nfdv1alpha1.NodeFeature{}} {
			key := client.ObjectKey{Name: node}
			if _, ok := o.(*nfdv1alpha1.NodeFeature); ok {
				key = feature
			}
			if err := suite.Client.Get(ctx, key, o); err == nil {
				_ = suite.Client.Delete(ctx, o)
			}
		}
	})
	seen := func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: node}, &workerv1.Devices{}); err != nil {
			return err
		}
		return c.Get(ctx, feature, &nfdv1alpha1.NodeFeature{})
	}

	pub := &devicemanager.Publisher{Client: c}
	cards := []providers.Device{a10g("GPU-own-0", 0)}
	Expect(pub.Publish(ctx, node, cards, nil)).To(Succeed())
	Eventually(seen).Should(Succeed(), "the watch has both objects the first publish made")
	sent()
	Expect(pub.Publish(ctx, node, cards, nil)).To(Succeed())
	Expect(pub.Publish(ctx, node, cards, nil)).To(Succeed())
	Expect(sent()).To(BeEmpty(), "unchanged cards are published without a request")

	Expect(pub.Publish(ctx, node, append(cards, a10g("GPU-own-1", 1)), nil)).To(Succeed())
	Expect(sent()).To(ConsistOf("PATCH /apis/nfd.k8s-sigs.io/v1alpha1/namespaces/gpustack-system/nodefeatures/"+feature.Name,
		"PATCH /apis/worker.gpustack.ai/v1/devices/"+node), "a second card patches both objects")
	d := &workerv1.Devices{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: node}, d)).To(Succeed())
	Expect(d.Spec.Groups).To(HaveLen(1))
	Expect(d.Spec.Groups[0].Accelerators).To(HaveLen(2))

	Expect(suite.Client.Delete(ctx, d)).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: node}, &workerv1.Devices{}))
	}).Should(BeTrue(), "the watch sees the deletion")
	Expect(pub.Publish(ctx, node, append(cards, a10g("GPU-own-1", 1)), nil)).To(Succeed())
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: node}, &workerv1.Devices{})).To(Succeed(), "made again")
})
