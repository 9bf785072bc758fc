package policies_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// benchPods are a typical Pod (one container with a slice and an SSH sidecar) and a worst case (twenty
// containers, each with accelerator and other keys).
func benchPods() map[string]policyCase {
	typical := policyCase{Name: "typical", Kind: "Pod", Spec: map[string]any{"containers": []any{
		map[string]any{"name": "main", "image": "ubuntu", "resources": map[string]any{"limits": map[string]any{
			"cpu": "8", "memory": "64Gi", "nvidia.com/gpu.sliced": "1", "nvidia.com/gpu.sliced.memory-percentage": "20",
			"nvidia.com/gpu.sliced.units": "320000"}}},
		map[string]any{"name": "sshd", "image": "ssh", "resources": map[string]any{"limits": map[string]any{
			"device.gpustack.ai/nvidia.visibility": "1"}}},
	}}}
	var containers []any
	for i := 0; i < 20; i++ {
		containers = append(containers, map[string]any{"name": fmt.Sprintf("c%d", i), "image": "busybox",
			"resources": map[string]any{"limits": map[string]any{"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi",
				"nvidia.com/gpu": "1", "example.com/other": "1"}}})
	}
	worst := policyCase{Name: "worst", Kind: "Pod", Spec: map[string]any{"containers": containers}}
	return map[string]policyCase{"typical": typical, "worst": worst}
}

// BenchmarkCEL measures the whole rule set on one Pod through the API server's CEL validators.
func BenchmarkCEL(b *testing.B) {
	policies := loadCELPolicies(b)
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ns := &corev1.Namespace{}
	ns.Name = "default"
	for name, c := range benchPods() {
		obj, _ := c.Objects()
		attrs := admission.NewAttributesRecord(obj, nil, gvk, "default", obj.GetName(), gvr, "", admission.Create, nil, false, &user.DefaultInfo{Name: "alice"})
		versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: obj}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for _, p := range policies {
					if p.policy.Spec.ParamKind == nil {
						p.validator.Validate(context.Background(), gvr, versioned, nil, ns, 10_000_000, nil)
					}
				}
			}
		})
	}
}

// BenchmarkRego measures the whole rule set on one Pod through OPA.
func BenchmarkRego(b *testing.B) {
	compiler := loadRego(b)
	q, err := rego.New(rego.Query(regoQuery), rego.Compiler(compiler), rego.Store(inmem.New())).PrepareForEval(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for name, c := range benchPods() {
		obj, _ := c.Objects()
		input := map[string]any{"review": map[string]any{"object": obj.Object, "operation": "CREATE", "namespace": "default",
			"userInfo": map[string]any{"username": "alice"}}}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := q.Eval(context.Background(), rego.EvalInput(input)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
