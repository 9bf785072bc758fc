package v1_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestCRDsUpToDate regenerates the CRDs from the Go types and fails when package/crds differs, so the
// committed CRDs never drift from the types.
func TestCRDsUpToDate(t *testing.T) {
	bin, skip, err := testenv.BinDir("controller-gen")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	out := t.TempDir()
	// The same invocation as `make generate`.
	cmd := exec.Command(filepath.Join(bin, "controller-gen"), "crd:allowDangerousTypes=false", "paths=./apis/...",
		"output:crd:artifacts:config="+out)
	cmd.Dir = testenv.RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	generated, _ := filepath.Glob(filepath.Join(out, "*.yaml"))
	committed, _ := filepath.Glob(testenv.Path("package", "crds", "*.yaml"))
	if len(generated) != len(committed) {
		t.Fatalf("controller-gen generates %d CRDs, package/crds holds %d: run `make generate`", len(generated), len(committed))
	}
	for _, g := range generated {
		want, _ := os.ReadFile(g)
		got, err := os.ReadFile(testenv.Path("package", "crds", filepath.Base(g)))
		if err != nil {
			t.Fatalf("%s is missing from package/crds: run `make generate`", filepath.Base(g))
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("package/crds/%s is stale: run `make generate`\n-generated, +committed:\n%s", filepath.Base(g), diff)
		}
	}
}

// TestRBACUpToDate regenerates the roles from the RBAC markers and fails when package/rbac differs.
func TestRBACUpToDate(t *testing.T) {
	bin, skip, err := testenv.BinDir("controller-gen")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	// The same invocations as `make generate`.
	for component, paths := range map[string][]string{
		"worker":         {"paths=./internal/controller/...", "paths=./internal/webhooks/...", "paths=./internal/kueueconfig/...", "paths=./internal/settingsapi/...", "paths=./cmd/gpustack-operator/..."},
		"device-manager": {"paths=./devicemanager/..."},
		"cpu-info":       {"paths=./cpureporter/..."},
		"cleanup":        {"paths=./internal/uninstall/..."},
	} {
		out := t.TempDir()
		args := append([]string{"rbac:roleName=gpustack-operator-" + component}, paths...)
		cmd := exec.Command(filepath.Join(bin, "controller-gen"), append(args, "output:rbac:artifacts:config="+out)...)
		cmd.Dir = testenv.RepoRoot()
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("controller-gen: %v\n%s", err, b)
		}
		want, _ := os.ReadFile(filepath.Join(out, "role.yaml"))
		got, err := os.ReadFile(testenv.Path("package", "rbac", component, "role.yaml"))
		if err != nil || string(want) != string(got) {
			t.Errorf("package/rbac/%s/role.yaml is stale: run `make generate`", component)
		}
	}
}

// TestSettingNamesMatchDefinitions keeps the Setting CRD's list of known names in step with the Go table.
func TestSettingNamesMatchDefinitions(t *testing.T) {
	data, err := os.ReadFile(testenv.Path("package", "crds", "worker.gpustack.ai_settings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(`rule: self\.metadata\.name in \[([^\]]*)\]`).FindStringSubmatch(string(data))
	if rule == nil {
		t.Fatal("the Setting CRD has no rule listing the known names")
	}
	var got []string
	for _, n := range strings.Split(rule[1], ",") {
		got = append(got, strings.Trim(strings.TrimSpace(n), "'"))
	}
	var want []string
	for _, d := range workerv1.SettingDefinitions {
		want = append(want, d.Name)
	}
	sort.Strings(got)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Setting CRD's known names differ from SettingDefinitions: -want, +got:\n%s", diff)
	}
}
