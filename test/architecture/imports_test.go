package architecture_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/test/architecture"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

const module = "github.com/gpustack/gpustack-operator"

// TestTreeImports checks the import graph of the whole tree against the layers.
func TestTreeImports(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the tree has far more", len(pkgs))
	}
	if v := architecture.Violations(module, architecture.Layers, pkgs); len(v) > 0 {
		t.Errorf("imports that point the wrong way (see docs/architecture.md, Layout):\n%s", strings.Join(v, "\n"))
	}
}

// TestPlantedImports shows that each rule fails, naming the import, when an arrow is planted the wrong way.
func TestPlantedImports(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	cases := map[string]struct {
		reason string
		pkg    architecture.Package
		want   []string
	}{
		"FunctionImportsController": {
			reason: "A function sees only its request: it never imports a controller.",
			pkg:    architecture.Package{Path: "functions/flavors", Imports: []string{m("internal/controller/composer")}},
			want:   []string{"functions/flavors (functions) imports internal/controller/composer (internal)"},
		},
		"FunctionImportsClient": {
			reason: "A function imports no Kubernetes client.",
			pkg:    architecture.Package{Path: "functions/instancetype", Imports: []string{"sigs.k8s.io/controller-runtime/pkg/client"}},
			want: []string{"functions/instancetype (functions) imports sigs.k8s.io/controller-runtime/pkg/client, " +
				"which the functions layer never imports"},
		},
		"CoreReadsEnvironment": {
			reason: "The domain core reads no environment: a process configures it at start.",
			pkg:    architecture.Package{Path: "vendors", Imports: []string{"os", "strings"}},
			want:   []string{"vendors (core) imports os, which the core layer never imports"},
		},
		"FunctionReadsEnvironment": {
			reason: "A function reads no environment either, only its request; its server is given getenv.",
			pkg:    architecture.Package{Path: "functions/server", Imports: []string{"os"}},
			want:   []string{"functions/server (functions) imports os, which the functions layer never imports"},
		},
		"CoreTestsReadFiles": {
			reason: "The core's tests may read files (golden data); only production code is pure.",
			pkg:    architecture.Package{Path: "pools", TestImports: []string{"os"}},
		},
		"CoreImportsProvider": {
			reason: "The domain core imports nothing of the project but apis.",
			pkg:    architecture.Package{Path: "pools", Imports: []string{m("providers"), m("apis/worker/v1")}},
			want:   []string{"pools (core) imports providers (providers)"},
		},
		"ApisImportsCore": {
			reason: "apis imports nothing of the project.",
			pkg:    architecture.Package{Path: "apis/worker/v1", Imports: []string{m("pools")}},
			want:   []string{"apis/worker/v1 (apis) imports pools (core)"},
		},
		"ProviderImportsAgent": {
			reason: "Providers import no agent, even from their tests.",
			pkg:    architecture.Package{Path: "providers/nvidia", TestImports: []string{m("devicemanager")}},
			want:   []string{"providers/nvidia (providers) tests import devicemanager (devicemanager)"},
		},
		"ControllerImportsSimulator": {
			reason: "Production code never imports the simulator; only plan does.",
			pkg:    architecture.Package{Path: "internal/controller/composer", Imports: []string{m("providers/simulated")}},
			want:   []string{"internal/controller/composer (internal) imports providers/simulated (simulator)"},
		},
		"ProductionImportsTestTooling": {
			reason: "No production package imports the test framework.",
			pkg:    architecture.Package{Path: "devicemanager", Imports: []string{m("test/framework/testenv")}},
			want:   []string{"devicemanager (devicemanager) imports test/framework/testenv (framework)"},
		},
		"AgentImportsInternal": {
			reason: "Nothing outside cmd and internal imports internal.",
			pkg:    architecture.Package{Path: "devicemanager/deviceplugin", Imports: []string{m("internal/webhooks")}},
			want:   []string{"devicemanager/deviceplugin (devicemanager) imports internal/webhooks (internal)"},
		},
		"UnknownFolder": {
			reason: "A new top-level folder must be given a layer.",
			pkg:    architecture.Package{Path: "common"},
			want:   []string{"common: belongs to no layer; add it to architecture.Layers"},
		},
		"AllowedArrows": {
			reason: "Arrows that point down are fine, and plan may read the simulator.",
			pkg: architecture.Package{Path: "internal/plan", Imports: []string{m("providers/simulated"), m("functions/xrs"),
				m("pools"), "fmt"}, TestImports: []string{m("test/framework/testenv")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := architecture.Violations(module, architecture.Layers, []architecture.Package{tc.pkg})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nViolations(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// listPackages asks the go command for every package of the tree and its imports.
func listPackages(t *testing.T) []architecture.Package {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = testenv.Path()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []architecture.Package
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("cannot decode go list: %v", err)
		}
		pkgs = append(pkgs, architecture.Package{
			Path:        strings.TrimPrefix(p.ImportPath, module+"/"),
			Imports:     p.Imports,
			TestImports: append(p.TestImports, p.XTestImports...),
		})
	}
	return pkgs
}
