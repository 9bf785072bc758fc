package policies_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestOPA runs the Rego rules' own tests with the real OPA CLI, and checks they are formatted as `opa fmt`
// writes them.
func TestOPA(t *testing.T) {
	bin, skip, err := testenv.BinDir("opa")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	opa := filepath.Join(bin, "opa")
	if out, err := exec.Command(opa, "test", "-v", "rego").CombinedOutput(); err != nil {
		t.Errorf("opa test: %v\n%s", err, out)
	} else if !strings.Contains(string(out), "PASS:") {
		t.Errorf("opa test ran no test:\n%s", out)
	}
	if out, err := exec.Command(opa, "fmt", "--list", "rego").CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("opa fmt would change: %s %v", out, err)
	}
	if out, err := exec.Command(opa, "check", "--strict", "rego").CombinedOutput(); err != nil {
		t.Errorf("opa check --strict: %v\n%s", err, out)
	}
}
