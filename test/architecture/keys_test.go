package architecture_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/test/architecture"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestKeysHaveOneHome checks that every label, annotation and finalizer key of the tree is declared in an API
// package (apis/worker/v1 for the product's), so a newcomer looks for a key in one place.
func TestKeysHaveOneHome(t *testing.T) {
	out, err := exec.Command("git", "-C", testenv.Path(), "ls-files", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Fields(string(out))
	if len(files) < 100 {
		t.Fatalf("git ls-files found %d Go files; the tree has far more", len(files))
	}
	var misplaced []string
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(testenv.Path(), f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in git
		}
		if err != nil {
			t.Fatal(err)
		}
		m, err := architecture.MisplacedKeys(f, src)
		if err != nil {
			t.Fatalf("cannot parse %s: %v", f, err)
		}
		misplaced = append(misplaced, m...)
	}
	if len(misplaced) > 0 {
		t.Errorf("keys declared outside apis/ (move them to apis/worker/v1/well_known_labels.go):\n%s",
			strings.Join(misplaced, "\n"))
	}
}

// TestMisplacedKeys shows the check naming a key declared outside apis/, and leaving the rest alone.
func TestMisplacedKeys(t *testing.T) {
	const src = "package pools\n\nconst (\n\tLabelManaged = \"gpustack.ai/managed\"\n\tM = 1600000\n)\n\n" +
		"const AnnotationQueue, FinalizerX = \"a\", \"b\"\n\nvar LabelVar = \"not a constant\"\n"
	cases := map[string]struct {
		reason string
		file   string
		want   []string
	}{
		"OutsideApis": {reason: "Constants named as keys are named, one line each.", file: "pools/model.go",
			want: []string{"pools/model.go: LabelManaged", "pools/model.go: AnnotationQueue", "pools/model.go: FinalizerX"}},
		"InApis": {reason: "The API packages are the keys' home.", file: "apis/worker/v1/well_known_labels.go"},
		"Test":   {reason: "A test declares what it likes.", file: "pools/model_test.go"},
		"Tools":  {reason: "So do the test framework and the build tools.", file: "test/framework/localcluster/nodes.go"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := architecture.MisplacedKeys(tc.file, []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nMisplacedKeys(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
