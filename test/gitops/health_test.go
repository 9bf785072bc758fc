// Package gitops tests the Argo CD pieces of examples/gitops: the Lua health checks, run with gopher-lua
// (the interpreter Argo CD embeds) on objects in every phase, and the argocd-cm ConfigMap that carries them.
package gitops

import (
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"

	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// update rewrites examples/gitops/argocd-cm.yaml instead of checking it; `make generate` runs it.
var update = flag.Bool("update", false, "rewrite examples/gitops/argocd-cm.yaml from the Lua files")

// health is what an Argo CD health script returns.
type health struct {
	Status  string
	Message string
}

// runHealth runs a health script on obj as Argo CD does: obj is a global table, the script returns hs.
func runHealth(t *testing.T, script string, obj map[string]any) health {
	t.Helper()
	L := lua.NewState(lua.Options{SkipOpenLibs: false})
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		t.Fatalf("the script fails: %v", err)
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the script returns %s, not a table", L.Get(-1).Type())
	}
	return health{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}
}

func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	}
	return lua.LNil
}

func object(phase, message string) map[string]any {
	o := map[string]any{"apiVersion": "worker.gpustack.ai/v1", "metadata": map[string]any{"name": "x"}}
	if phase != "" {
		st := map[string]any{"phase": phase}
		if message != "" {
			st["phaseMessage"] = message
		}
		o["status"] = st
	}
	return o
}

func script(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(testenv.Path("examples", "gitops", "health", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInstanceTypeHealth(t *testing.T) {
	s := script(t, "instancetype.lua")
	cases := map[string]struct {
		reason string
		obj    map[string]any
		want   health
	}{
		"New":      {"Before the operator writes a phase the pool is on its way.", object("", ""), health{"Progressing", "Waiting for the operator to compose the pool"}},
		"Active":   {"An Active pool is healthy.", object("Active", ""), health{"Healthy", "The pool admits workloads"}},
		"Draining": {"A draining pool is on its way out.", object("Draining", "2 workloads still reserved"), health{"Progressing", "2 workloads still reserved"}},
		"Inactive": {"An Inactive pool is on hold, by its admin.", object("Inactive", ""), health{"Suspended", "The pool's queue is on hold"}},
		"Unknown":  {"A phase this script does not know is degraded, and named.", object("Exploded", ""), health{"Degraded", "Unknown phase Exploded"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, runHealth(t, s, tc.obj)); diff != "" {
				t.Errorf("%s\ninstancetype.lua: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestInstanceHealth(t *testing.T) {
	s := script(t, "instance.lua")
	wait := "waiting for a card with room: pool flavor f cannot take a slice of 60% now"
	cases := map[string]struct {
		reason string
		obj    map[string]any
		want   health
	}{
		"New":      {"Before the operator writes a phase the Instance is on its way.", object("", ""), health{"Progressing", "Waiting for the operator to start the Instance"}},
		"Starting": {"A starting Instance says what it waits for.", object("Starting", wait), health{"Progressing", wait}},
		"Ready":    {"A Ready Instance is healthy.", object("Ready", ""), health{"Healthy", "Ready"}},
		"Stopping": {"A stopping Instance is on its way.", object("Stopping", "stopping: waiting for the Pod to go"), health{"Progressing", "stopping: waiting for the Pod to go"}},
		"Stopped":  {"A stopped Instance is suspended, not broken.", object("Stopped", ""), health{"Suspended", "Stopped"}},
		"Failed":   {"A failed Instance is degraded, with the Pod's reason.", object("Failed", "OOMKilled"), health{"Degraded", "OOMKilled"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, runHealth(t, s, tc.obj)); diff != "" {
				t.Errorf("%s\ninstance.lua: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestArgoCDConfigMap checks that examples/gitops/argocd-cm.yaml carries the Lua files as they are; `make
// generate` rewrites it.
func TestArgoCDConfigMap(t *testing.T) {
	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "argocd-cm", "namespace": "argocd", "labels": map[string]any{"app.kubernetes.io/part-of": "argocd"}},
		"data": map[string]any{
			"resource.customizations.health.worker.gpustack.ai_InstanceType": script(t, "instancetype.lua"),
			"resource.customizations.health.worker.gpustack.ai_Instance":     script(t, "instance.lua"),
		},
	}
	want, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	want = append([]byte("# Generated from examples/gitops/health/*.lua by `make generate`: merge into your argocd-cm.\n"), want...)
	path := testenv.Path("examples", "gitops", "argocd-cm.yaml")
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("argocd-cm.yaml is stale; run make generate: -want, +got:\n%s", diff)
	}
}
