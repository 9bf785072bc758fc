package localcluster

import (
	"context"
	"fmt"
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

// nvmlDir is where this test process's stand-in NVML lies. go-nvml's calls bind, once in a process, to the
// first NVML library loaded, and the stand-in stays loaded once loaded (it pins itself, as its MIG instances
// live in it): a second copy elsewhere would never be called. So every test loads the one copy at this path
// and writes there the fixture of the node it reads, which the library reads again at its next first init.
func nvmlDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("nvml-standin-%d", os.Getpid()))
}

// standIn puts the stand-in NVML built in bin and the node's fixture in nvmlDir, until the test ends, and
// returns go-nvml over it as a node's agent loads it.
func standIn(t *testing.T, bin string, node simulated.Node) nvml.Interface {
	t.Helper()
	dir := nvmlDir()
	lib, err := os.ReadFile(filepath.Join(bin, "libnvidia-ml.so.1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	files := map[string]string{"libnvidia-ml.so.1": string(lib), "libnvidia-ml.fixture": nvmlFixture(node)}
	for name, data := range files {
		// Written beside and renamed: truncating the library a previous test still has mapped would crash it.
		if err := os.WriteFile(filepath.Join(dir, name+".new"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, name+".new"), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return nvml.New(nvml.WithLibraryPath(filepath.Join(dir, "libnvidia-ml.so.1")))
}

// inventoryNode is a node of one of the example inventories.
func inventoryNode(t *testing.T, file, name string) simulated.Node {
	t.Helper()
	inv, err := simulated.Load(testenv.Path("examples", "clusters", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range inv.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("%s has no node %s", file, name)
	return simulated.Node{}
}

// detect is a node's cards as the NVIDIA backend detects them through the stand-in and as the simulated
// backend reports them.
func detect(t *testing.T, lib nvml.Interface, node simulated.Node) (got, want []providers.Device) {
	t.Helper()
	want, err := simulated.New(node).Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err = nvidia.New(lib).Detect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got, want
}

// reclaimAll destroys every GPU instance left on the card when the test ends, as the instances outlive it
// in this process and the next test (or the next -count) would find them.
func reclaimAll(t *testing.T, lib nvml.Interface, card providers.Device) {
	t.Cleanup(func() {
		for _, err := range nvidia.NewMIG(lib).Reclaim(context.Background(), card, func(string) bool { return false }) {
			t.Errorf("cannot clean up card %s: %v", card.UUID, err)
		}
	})
}

// TestNVMLStandIn loads the stand-in NVML library built here with go-nvml, as a real node's agent loads it,
// and checks that the NVIDIA backend detects through it the very cards the simulated backend reports for the
// node whose fixture it reads: the fixture and the library lose nothing of a card, nor of a MIG card's
// profiles, their memory, slices, counts and placements.
func TestNVMLStandIn(t *testing.T) {
	bin, skip, err := testenv.BinDir("libnvidia-ml.so.1")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	cases := map[string]struct {
		reason    string
		inventory string
		node      string
		cards     int
		mig       bool
	}{
		"T4": {
			reason:    "node-t4-b's four T4s, which have no MIG.",
			inventory: "walkthrough.yaml", node: "node-t4-b", cards: 4,
		},
		"H100MIG": {
			reason:    "node-h100's eight H100s in MIG mode, with eight memory slices each.",
			inventory: "h100-mig.yaml", node: "node-h100", cards: 8, mig: true,
		},
		"A100MIG": {
			reason:    "node-a100's A100 80GB in MIG mode.",
			inventory: "h100-mig.yaml", node: "node-a100", cards: 1, mig: true,
		},
		"A30MIG": {
			reason:    "node-a30's A30 in MIG mode, with four memory slices.",
			inventory: "nine-vendors.yaml", node: "node-a30", cards: 1, mig: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node := inventoryNode(t, tc.inventory, tc.node)
			lib := standIn(t, bin, node)
			if got := nvidia.FindLibrary([]string{filepath.Join(nvmlDir(), "none"), nvmlDir()}); got != "" {
				t.Errorf("FindLibrary found %s in a directory that is no driver root's library directory", got)
			}
			got, want := detect(t, lib, node)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\nDetect(...): -want, +got:\n%s", tc.reason, diff)
			}
			if len(got) != tc.cards {
				t.Errorf("%s\nDetect(...): %d cards, want %d", tc.reason, len(got), tc.cards)
			}
			// Without partitions on either side the comparison would say nothing of MIG.
			for _, d := range got {
				if (len(d.Partitions) > 0) != tc.mig {
					t.Errorf("%s\nDetect(...): card %d has %d partition profiles, want them only in MIG mode",
						tc.reason, d.Index, len(d.Partitions))
				}
			}
		})
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
	lib, err := os.ReadFile(filepath.Join(bin, "libnvidia-ml.so.1"))
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
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
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
