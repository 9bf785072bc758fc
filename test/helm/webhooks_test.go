package helm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/gpustack/gpustack-operator/internal/webhooks"
)

// TestTemplateWebhooks checks the chart's two webhook configurations against webhooks.Configurations, the
// worker's own statement of them, behind the worker's Service and behind a webhook URL; neither carries a CA
// bundle, which the worker writes.
func TestTemplateWebhooks(t *testing.T) {
	service := func(path string) admissionv1.WebhookClientConfig {
		return admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: namespace,
			Name: "gpustack-operator-worker-webhook", Path: ptr.To(path), Port: ptr.To[int32](443)}}
	}
	url := func(path string) admissionv1.WebhookClientConfig {
		return admissionv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443" + path)}
	}
	cases := map[string]struct {
		reason string
		set    []string
		client func(path string) admissionv1.WebhookClientConfig
	}{
		"Service": {reason: "By default the API server reaches the webhooks through the worker's Service.", client: service},
		"URL": {reason: "worker.webhook.url reaches them at that URL instead.", set: []string{"worker.webhook.url=https://127.0.0.1:9443"},
			client: url},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := render(t, tc.set...)
			wantMutating, wantValidating := webhooks.Configurations(tc.client)
			gotMutating := convert[admissionv1.MutatingWebhookConfiguration](t, objs["MutatingWebhookConfiguration/"+webhooks.MutatingName])
			gotValidating := convert[admissionv1.ValidatingWebhookConfiguration](t, objs["ValidatingWebhookConfiguration/"+webhooks.ValidatingName])
			if diff := cmp.Diff(wantMutating.Webhooks, gotMutating.Webhooks); diff != "" {
				t.Errorf("%s\nthe chart's %s: -webhooks.Configurations, +rendered:\n%s", tc.reason, webhooks.MutatingName, diff)
			}
			if diff := cmp.Diff(wantValidating.Webhooks, gotValidating.Webhooks); diff != "" {
				t.Errorf("%s\nthe chart's %s: -webhooks.Configurations, +rendered:\n%s", tc.reason, webhooks.ValidatingName, diff)
			}
		})
	}
}
