// Package policies_test runs the one table of admission cases in testdata/cases.yaml through both engines:
// the CEL ValidatingAdmissionPolicies of cel/ (compiled by the API server's own libraries, offline) and the
// Rego policies of rego/ (through OPA), and fails on any difference in verdict or message.
package policies_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpustack/gpustack-operator/test/framework/policycases"
)

// policyCase is one row of the shared table.
type policyCase = policycases.Case

// loadCases reads the table, expanding the cases that run for every vendor.
func loadCases(t testing.TB) []policyCase {
	t.Helper()
	cases, err := policycases.Load(filepath.Join("testdata", "cases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// setting returns the Setting a gate policy's binding names, with the case's value or the default false.
func setting(c policyCase, p *admissionv1.ValidatingAdmissionPolicy) *unstructured.Unstructured {
	name := paramNames[p.Name]
	value, ok := c.Settings[name]
	if !ok {
		value = "false"
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"value": value}}}
	u.SetAPIVersion("worker.gpustack.ai/v1")
	u.SetKind("Setting")
	u.SetNamespace("gpustack-system")
	u.SetName(name)
	return u
}

// regoQuery collects the messages of every violation of every rule.
const regoQuery = `msgs := [v.msg | some p; some v in data.gpustack[p].violation]`

// loadRego compiles every rule in rego/, skipping the tests.
func loadRego(t testing.TB) *ast.Compiler {
	t.Helper()
	modules := map[string]string{}
	err := filepath.WalkDir("rego", func(path string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".rego") || strings.HasSuffix(path, "_test.rego") {
			return err
		}
		data, err := os.ReadFile(path)
		modules[path] = string(data)
		return err
	})
	if err != nil || len(modules) == 0 {
		t.Fatalf("no Rego policies: %v", err)
	}
	c, err := ast.CompileModules(modules)
	if err != nil {
		t.Fatalf("cannot compile the Rego policies: %v", err)
	}
	return c
}

// evalRego runs one case through OPA, as Gatekeeper would: the request under input.review, the Settings
// under data.inventory.
func evalRego(t testing.TB, compiler *ast.Compiler, c policyCase) []string {
	t.Helper()
	obj, old := c.Objects()
	review := map[string]any{
		"object": obj.Object, "operation": "CREATE", "namespace": c.NamespaceOrDefault(),
		"userInfo": map[string]any{"username": c.UserOrDefault()}, "kind": map[string]any{"kind": c.Kind},
	}
	if old != nil {
		review["oldObject"], review["operation"] = old.Object, "UPDATE"
	}
	settings := map[string]any{}
	for name, v := range c.Settings {
		settings[name] = map[string]any{"spec": map[string]any{"value": v}}
	}
	store := inmem.NewFromObject(map[string]any{"inventory": map[string]any{"namespace": map[string]any{
		"gpustack-system": map[string]any{"worker.gpustack.ai/v1": map[string]any{"Setting": settings}}}}})
	rs, err := rego.New(rego.Query(regoQuery), rego.Compiler(compiler), rego.Store(store),
		rego.Input(map[string]any{"review": review})).Eval(context.Background())
	if err != nil || len(rs) != 1 {
		t.Fatalf("cannot evaluate the Rego policies: %v", err)
	}
	var msgs []string
	for _, m := range rs[0].Bindings["msgs"].([]any) {
		msgs = append(msgs, m.(string))
	}
	sort.Strings(msgs)
	return msgs
}

// TestEnginesAgree runs every case through both engines and checks each against the table.
func TestEnginesAgree(t *testing.T) {
	cases := loadCases(t)
	if len(cases) < 100 {
		t.Errorf("the table holds %d cases; it must cover at least 100", len(cases))
	}
	cel := loadCELPolicies(t)
	q := loadRego(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want := append([]string(nil), c.Want...)
			sort.Strings(want)
			if diff := cmp.Diff(want, evalCEL(t, cel, c), cmpEmpty); diff != "" {
				t.Errorf("CEL: -want, +got:\n%s", diff)
			}
			if diff := cmp.Diff(want, evalRego(t, q, c), cmpEmpty); diff != "" {
				t.Errorf("Rego: -want, +got:\n%s", diff)
			}
		})
	}
}

// cmpEmpty treats a nil and an empty list of messages alike.
var cmpEmpty = cmp.Comparer(func(a, b []string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return cmp.Equal(a, b)
})
