package localcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/providers"
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

// TestGPUCheckScript runs hack/gpu-check.sh, the check prepared for a lent GPU machine, as far as this machine
// can: in a mount namespace of its own whose PCI bus shows node-t4-a's card and whose loader finds the stand-in
// NVML, it prints what the agent would publish, which must be node-t4-a's card. On a GPU machine the same
// script reads the real bus and driver.
func TestGPUCheckScript(t *testing.T) {
	bin, skip, err := testenv.BinDir("libnvidia-ml.so.1", "gpustack-operator")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	if os.Geteuid() != 0 {
		t.Skip("the script's bus fixture needs a mount namespace: run as root")
	}
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	node := inv.Nodes[2] // node-t4-a: one T4
	dir := t.TempDir()
	lib, err := os.ReadFile(filepath.Join(bin, "libnvidia-ml.so.1")) //nolint:gosec // built here
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"driver/libnvidia-ml.so.1": string(lib), "driver/libnvidia-ml.fixture": nvmlFixture(node),
		"pci/0000:10:00.0/class": "0x030200\n", "pci/0000:10:00.0/vendor": "0x10de\n", "pci/0000:10:00.0/device": "0x1eb8\n"}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil { //nolint:gosec // a test's fixture
			t.Fatal(err)
		}
	}
	script := "mount --bind " + filepath.Join(dir, "pci") + " /sys/bus/pci/devices && exec " + testenv.Path("hack", "gpu-check.sh") + " --node node-t4-a"
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "GPU_CHECK_BINARY="+filepath.Join(bin, "gpustack-operator"), "LD_LIBRARY_PATH="+filepath.Join(dir, "driver"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/gpu-check.sh: %v\n%s", err, out)
	}
	var printed struct {
		Devices struct {
			Spec workerv1.DevicesSpec `json:"spec"`
		} `json:"devices"`
	}
	if err := yaml.Unmarshal(out, &printed); err != nil {
		t.Fatalf("cannot read what the script printed: %v\n%s", err, out)
	}
	want, _ := simulated.New(node).Detect(context.Background())
	if diff := cmp.Diff(providers.DevicesSpec(want), printed.Devices.Spec); diff != "" {
		t.Errorf("hack/gpu-check.sh prints node-t4-a's card, read through NVML: -want, +got:\n%s", diff)
	}
}
