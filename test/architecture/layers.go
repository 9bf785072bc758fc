// Package architecture holds the project's dependency rules as data, and checks the import graph of the tree
// against them: every arrow points down the layers docs/architecture.md's Layout names, cmd -> (internal |
// devicemanager | functions) -> (domain core | providers) -> apis.
package architecture

import (
	"sort"
	"strings"
)

// Layer is a group of packages with the same right to import.
type Layer struct {
	// Name names the layer in messages.
	Name string
	// Prefixes are the module-relative package paths (a path and everything under it) of the layer.
	Prefixes []string
	// MayImport are the layers whose packages this layer's production code may import. A layer may always
	// import itself.
	MayImport []string
	// TestsMayImport are the layers that only the layer's tests may import as well.
	TestsMayImport []string
	// ForbiddenExternal are import path prefixes outside the module that the layer's production code never
	// imports (a function sees only its request, so it imports no Kubernetes client; the domain core reads no
	// environment or file, so its answer depends on its arguments alone).
	ForbiddenExternal []string
}

// Layers are the project's layers. A package belongs to the layer of its longest matching prefix, so
// providers/simulated is the simulator, not a provider.
var Layers = []Layer{
	{Name: "apis", Prefixes: []string{"apis"}, TestsMayImport: []string{"framework"}},
	{Name: "simulator", Prefixes: []string{"providers/simulated"},
		MayImport: []string{"apis", "core", "providers"}},
	// The domain core: plain functions over plain values, read by the functions and the controllers alike
	// (envvar reads the commands' variables through the getenv they pass, never the process's own).
	{Name: "core", Prefixes: []string{"pools", "vendors", "instancepod", "envvar"},
		MayImport: []string{"apis"}, ForbiddenExternal: pure},
	{Name: "data", Prefixes: []string{"package", "policies"}, TestsMayImport: []string{"apis", "framework"}},
	{Name: "providers", Prefixes: []string{"providers"},
		MayImport: []string{"apis", "core"}, TestsMayImport: []string{"framework"}},
	{Name: "functions", Prefixes: []string{"functions"},
		MayImport:         []string{"apis", "core"},
		TestsMayImport:    []string{"framework"},
		ForbiddenExternal: append([]string{"sigs.k8s.io/controller-runtime", "k8s.io/client-go"}, pure...)},
	// The node agents: the device manager and the CPU reporter.
	{Name: "devicemanager", Prefixes: []string{"devicemanager", "cpureporter"},
		MayImport: []string{"apis", "core", "providers", "data"}, TestsMayImport: []string{"framework", "simulator"}},
	// The SSH sidecar's own program, which runs in an Instance's Pod and imports nothing of the operator.
	{Name: "sshsidecar", Prefixes: []string{"sshsidecar"}},
	{Name: "internal", Prefixes: []string{"internal"},
		MayImport:      []string{"apis", "core", "providers", "data", "devicemanager", "functions"},
		TestsMayImport: []string{"framework", "simulator"}},
	// plan composes an inventory file without a cluster: the one production user of the simulator.
	{Name: "plan", Prefixes: []string{"internal/plan"},
		MayImport:      []string{"apis", "core", "providers", "data", "devicemanager", "functions", "internal", "simulator"},
		TestsMayImport: []string{"framework"}},
	{Name: "cmd", Prefixes: []string{"cmd"},
		MayImport: []string{"apis", "core", "providers", "data", "devicemanager", "functions", "internal", "plan",
			"simulator", "sshsidecar"}},
	// The test framework, the test suites and the build helpers drive everything, so they may import it all;
	// nothing in production imports them.
	{Name: "framework", Prefixes: []string{"test/framework"}, MayImport: []string{"*"}},
	{Name: "tests", Prefixes: []string{"test"}, MayImport: []string{"*"}},
	{Name: "hack", Prefixes: []string{"hack"}, MayImport: []string{"*"}},
}

// pure are the packages that would let a function's answer depend on the process that runs it (the worker or
// a Crossplane function Pod): its environment, files and commands. A process reads its configuration at start
// (cmd) and passes it down (vendors.Configure, server.Run's getenv).
var pure = []string{"os", "io/ioutil", "syscall"}

// Package is one package of the tree and what it imports.
type Package struct {
	// Path is the module-relative import path (functions/flavors).
	Path string
	// Imports are the full import paths of the production code.
	Imports []string
	// TestImports are the full import paths of the tests (internal and external test packages).
	TestImports []string
}

// Violations returns one message per import that points the wrong way, naming the importer and the import,
// sorted. module is the module path that prefixes the tree's own imports.
func Violations(module string, layers []Layer, pkgs []Package) []string {
	var out []string
	for _, p := range pkgs {
		from, ok := layerOf(layers, p.Path)
		if !ok {
			out = append(out, p.Path+": belongs to no layer; add it to architecture.Layers")
			continue
		}
		out = append(out, check(module, layers, p.Path, from, p.Imports, false)...)
		out = append(out, check(module, layers, p.Path, from, p.TestImports, true)...)
	}
	sort.Strings(out)
	return out
}

func check(module string, layers []Layer, path string, from Layer, imports []string, tests bool) []string {
	what := "imports"
	if tests {
		what = "tests import"
	}
	var out []string
	for _, imp := range imports {
		rel, ours := strings.CutPrefix(imp, module+"/")
		if !ours {
			for _, f := range from.ForbiddenExternal {
				if !tests && (imp == f || strings.HasPrefix(imp, f+"/")) {
					out = append(out, path+" ("+from.Name+") "+what+" "+imp+", which the "+from.Name+" layer never imports")
				}
			}
			continue
		}
		to, ok := layerOf(layers, rel)
		if !ok || allowed(from, to.Name, tests) {
			continue
		}
		out = append(out, path+" ("+from.Name+") "+what+" "+rel+" ("+to.Name+")")
	}
	return out
}

func allowed(from Layer, to string, tests bool) bool {
	if to == from.Name {
		return true
	}
	may := from.MayImport
	if tests {
		may = append(append([]string{}, may...), from.TestsMayImport...)
	}
	for _, l := range may {
		if l == "*" || l == to {
			return true
		}
	}
	return false
}

// layerOf returns the layer of the longest matching prefix.
func layerOf(layers []Layer, path string) (Layer, bool) {
	var best Layer
	bestLen := -1
	for _, l := range layers {
		for _, p := range l.Prefixes {
			if (path == p || strings.HasPrefix(path, p+"/")) && len(p) > bestLen {
				best, bestLen = l, len(p)
			}
		}
	}
	return best, bestLen >= 0
}
