package webhooks

import (
	"context"
	"encoding/base64"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// The chart's settings APIService gets the webhooks' CA as its caBundle, and the worker owns that field alone;
// a bundle that is not the served pair's is found stale; an APIService the chart never made is waited for, then
// named in the error.
var _ = It("writes the CA into the chart's APIService, and finds a stale one", func() {
	ctx := context.Background()
	chartMade := apiService(settingsv1.APIServiceName)
	chartMade.Object["spec"] = map[string]any{"group": "settings.gpustack.ai", "version": "v1",
		"service":              map[string]any{"namespace": "gpustack-system", "name": "gpustack-operator-worker-webhook", "port": int64(8443)},
		"groupPriorityMinimum": int64(1100), "versionPriority": int64(15)}
	Expect(suite.Client.Create(ctx, chartMade, client.FieldOwner("helm"))).To(Succeed())
	DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), apiService(settingsv1.APIServiceName)) })
	names := []string{settingsv1.APIServiceName}

	pair, err := SelfSigned([]string{"gpustack-operator-worker-webhook.gpustack-system.svc"}, time.Now())
	Expect(err).NotTo(HaveOccurred())
	stale, err := staleAPIService(ctx, suite.Client, names, pair.CA)
	Expect(err).NotTo(HaveOccurred())
	Expect(stale).To(Equal("APIService "+settingsv1.APIServiceName), "no caBundle yet")

	Expect(provisionAPIServices(ctx, suite.Client, names, pair.CA, time.Second)).To(Succeed())
	live := apiService(settingsv1.APIServiceName)
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(live), live)).To(Succeed())
	bundle, _, _ := unstructured.NestedString(live.Object, "spec", "caBundle")
	Expect(bundle).To(Equal(base64.StdEncoding.EncodeToString(pair.CA)))
	Expect(testenv.OwnershipDiff(live, CAFieldManager, map[string]any{"spec": map[string]any{"caBundle": bundle}})).To(BeEmpty(),
		"the worker owns the caBundle and nothing else")
	stale, err = staleAPIService(ctx, suite.Client, names, pair.CA)
	Expect(err).NotTo(HaveOccurred())
	Expect(stale).To(BeEmpty(), "the bundle is the pair's")

	other, err := SelfSigned([]string{"gpustack-operator-worker-webhook.gpustack-system.svc"}, time.Now())
	Expect(err).NotTo(HaveOccurred())
	stale, err = staleAPIService(ctx, suite.Client, names, other.CA)
	Expect(err).NotTo(HaveOccurred())
	Expect(stale).To(Equal("APIService "+settingsv1.APIServiceName), "a renewed pair makes the bundle stale")

	err = provisionAPIServices(ctx, suite.Client, []string{"v1.absent.gpustack.ai"}, pair.CA, time.Second)
	Expect(err).To(MatchError(ContainSubstring("APIService v1.absent.gpustack.ai is not there after 1s")))
})
