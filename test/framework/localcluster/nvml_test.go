package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers/nvidia"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestNVMLStandIn loads the stand-in NVML library built here with go-nvml, as a real node's agent loads it,
// and checks that the NVIDIA backend detects through it the very cards the simulated backend reports for the
// node whose fixture it reads: the fixture and the library lose nothing of a card.
func TestNVMLStandIn(t *testing.T) {
	bin, skip, err := testenv.BinDir("libnvidia-ml.so.1")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	node := inv.Nodes[3] // node-t4-b: four T4s
	want, err := simulated.New(node).Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lib, err := os.ReadFile(filepath.Join(bin, "libnvidia-ml.so.1")) //nolint:gosec // built here
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"libnvidia-ml.so.1": string(lib), "libnvidia-ml.fixture": nvmlFixture(node)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil { //nolint:gosec // a test's fixture
			t.Fatal(err)
		}
	}
	if got := nvidia.FindLibrary([]string{filepath.Join(dir, "none"), dir}); got != "" {
		t.Errorf("FindLibrary found %s in a directory that is no driver root's library directory", got)
	}
	got, err := nvidia.New(nvml.New(nvml.WithLibraryPath(filepath.Join(dir, "libnvidia-ml.so.1")))).Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the NVIDIA backend through the stand-in NVML reads node-t4-b's cards: -simulated, +detected:\n%s", diff)
	}
	if len(got) != 4 {
		t.Errorf("%d cards detected, want node-t4-b's four", len(got))
	}
}
