package webhooks

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestConfigurations checks what every webhook promises the API server: an answer within TimeoutSeconds, and,
// for a namespaced kind, nothing asked in the system's or the operator's namespaces, so their Pods start even
// while the worker cannot answer.
func TestConfigurations(t *testing.T) {
	mutating, validating := Configurations(func(string) admissionv1.WebhookClientConfig { return admissionv1.WebhookClientConfig{} })
	type hook struct {
		name       string
		timeout    *int32
		namespaces *metav1.LabelSelector
		resources  []string
	}
	var hooks []hook
	for _, w := range mutating.Webhooks {
		hooks = append(hooks, hook{w.Name, w.TimeoutSeconds, w.NamespaceSelector, w.Rules[0].Resources})
	}
	for _, w := range validating.Webhooks {
		hooks = append(hooks, hook{w.Name, w.TimeoutSeconds, w.NamespaceSelector, w.Rules[0].Resources})
	}
	for _, h := range hooks {
		if h.timeout == nil || *h.timeout != TimeoutSeconds {
			t.Errorf("webhook %s: timeoutSeconds %v, want %d", h.name, h.timeout, TimeoutSeconds)
		}
		if h.resources[0] == "instancetypes" {
			continue // cluster-scoped: no namespace to select
		}
		sel, err := metav1.LabelSelectorAsSelector(h.namespaces)
		if err != nil {
			t.Fatalf("webhook %s: %v", h.name, err)
		}
		for ns, want := range map[string]bool{"default": true, "team-a": true, "kube-system": false,
			"gpustack-system": false, "gpustack-device-manager": false, "kueue-system": false} {
			if got := sel.Matches(labels.Set{"kubernetes.io/metadata.name": ns}); got != want {
				t.Errorf("webhook %s asked in namespace %s: %v, want %v", h.name, ns, got, want)
			}
		}
	}
}
