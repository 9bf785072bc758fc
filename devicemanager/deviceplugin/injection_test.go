package deviceplugin

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

func TestInjection(t *testing.T) {
	// spec writes a CDI spec of kind into a node root's /etc/cdi.
	spec := func(kind string) string {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "etc", "cdi"), 0o755); err != nil {
			t.Fatal(err)
		}
		data := "cdiVersion: 0.6.0\nkind: " + kind + "\ndevices:\n- name: all\n"
		if err := os.WriteFile(filepath.Join(root, "etc", "cdi", "vendor.yaml"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	type want struct {
		cdi map[string]bool
		err string
	}
	cases := map[string]struct {
		reason   string
		strategy string
		root     string
		want     want
	}{
		"Default": {
			reason: "Unset, NVIDIA's cards are named in NVIDIA_VISIBLE_DEVICES.",
			root:   spec("nvidia.com/gpu"),
			want:   want{cdi: map[string]bool{}},
		},
		"EnvVar": {
			reason:   "envvar is the default, said.",
			strategy: "envvar", root: spec("nvidia.com/gpu"),
			want: want{cdi: map[string]bool{}},
		},
		"CDIAnnotations": {
			reason:   "cdi-annotations names them as CDI devices, whatever the node's specs.",
			strategy: "cdi-annotations", root: t.TempDir(),
			want: want{cdi: map[string]bool{"nvidia": true}},
		},
		"AutoWithSpec": {
			reason:   "auto takes CDI on a node with a CDI spec of NVIDIA's kind.",
			strategy: "Auto", root: spec("nvidia.com/gpu"),
			want: want{cdi: map[string]bool{"nvidia": true}},
		},
		"AutoWithoutSpec": {
			reason:   "auto keeps the variable on a node whose CDI specs are another vendor's.",
			strategy: "auto", root: spec("amd.com/gpu"),
			want: want{cdi: map[string]bool{}},
		},
		"Unknown": {
			reason:   "An unknown strategy stops the device manager with the variable named.",
			strategy: "volume-mounts", root: t.TempDir(),
			want: want{err: `GPUSTACK_NVIDIA_DEVICE_INJECTION_STRATEGY="volume-mounts": want envvar, cdi-annotations or auto`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Injection(func(k string) string {
				if k == "GPUSTACK_NVIDIA_DEVICE_INJECTION_STRATEGY" {
					return tc.strategy
				}
				return ""
			}, tc.root)
			g := want{cdi: got}
			if err != nil {
				g.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, g, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nInjection(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestAllocateThroughCDI allocates NVIDIA's whole cards, a slice and a partition on a node that injects
// through CDI and on one that does not.
func TestAllocateThroughCDI(t *testing.T) {
	nvidia, _ := vendors.Lookup("nvidia")
	cards := []providers.Device{{Manufacturer: "nvidia", UUID: "GPU-a", Index: 0, MemoryMiB: 16384},
		{Manufacturer: "nvidia", UUID: "GPU-b", Index: 1, MemoryMiB: 16384}}
	lib := t.TempDir()
	stageEnforcers(t, lib, cards[0])
	// whole allocates both cards to one container through the whole-card resource.
	whole := func(rt Runtime) (*pluginapi.ContainerAllocateResponse, error) {
		p := &Plugin{Resource: Resource{Name: "nvidia.com/gpu", Kind: Whole, Vendor: nvidia}, Runtime: rt,
			Cards: func() []providers.Device { return cards }}
		resp, err := p.Allocate(context.Background(), &pluginapi.AllocateRequest{
			ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"GPU-a", "GPU-b"}}}})
		if err != nil {
			return nil, err
		}
		return resp.ContainerResponses[0], nil
	}
	type want struct {
		envs        map[string]string
		annotations map[string]string
	}
	cases := map[string]struct {
		reason string
		cdi    bool
		// allocate returns what one container is given.
		allocate func(rt Runtime) (*pluginapi.ContainerAllocateResponse, error)
		want     want
	}{
		"WholeCardsByVariable": {
			reason:   "Without CDI the cards are named in NVIDIA_VISIBLE_DEVICES.",
			allocate: whole,
			want:     want{envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b"}},
		},
		"WholeCardsByCDI": {
			reason:   "With CDI the cards are CDI devices in cdi.k8s.io/gpustack-nvidia, and the variable is void.",
			cdi:      true,
			allocate: whole,
			want: want{envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "void"},
				annotations: map[string]string{"cdi.k8s.io/gpustack-nvidia": "nvidia.com/gpu=GPU-a,nvidia.com/gpu=GPU-b"}},
		},
		"SliceByCDI": {
			reason: "A slice's card is a CDI device too; the enforcer's limits stay in the environment.",
			cdi:    true,
			allocate: func(rt Runtime) (*pluginapi.ContainerAllocateResponse, error) {
				return rt.sliceFor(cards[0], Budget{MemoryMiB: 4096, CoresPercent: 25}, "slice")
			},
			want: want{envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "void", "CUDA_DEVICE_MEMORY_LIMIT_0": "4096m",
				"CUDA_DEVICE_SM_LIMIT": "25", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "LIBCUDA_LOG_LEVEL": "0"},
				annotations: map[string]string{"cdi.k8s.io/gpustack-nvidia": "nvidia.com/gpu=GPU-a"}},
		},
		"PartitionByCDI": {
			reason: "A partition is named by its device name, as nvidia-ctk's specs name MIG devices by UUID.",
			cdi:    true,
			allocate: func(rt Runtime) (*pluginapi.ContainerAllocateResponse, error) {
				return rt.expose("nvidia", []string{"MIG-1"}), nil
			},
			want: want{envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "void"},
				annotations: map[string]string{"cdi.k8s.io/gpustack-nvidia": "nvidia.com/gpu=MIG-1"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rt := Runtime{LibDir: lib, StateDir: t.TempDir(), CDI: map[string]bool{"nvidia": tc.cdi}}
			resp, err := tc.allocate(rt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, want{envs: resp.Envs, annotations: resp.Annotations}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nwhat the container is given: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
