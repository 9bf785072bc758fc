package deviceplugin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAutoReadsContainerd: auto takes CDI only where the node's containerd resolves CDI devices, from the spec
// directories it names, and reads its configuration where GPUSTACK_CONTAINERD_CONFIG_DIR says.
func TestAutoReadsContainerd(t *testing.T) {
	const nvidiaSpec = "cdiVersion: 0.6.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n"
	cases := map[string]struct {
		reason string
		files  map[string]string
		dir    string
		want   bool
	}{
		"NoConfig": {reason: "Without a configuration containerd's defaults hold: CDI on, specs in /etc/cdi.",
			files: map[string]string{"etc/cdi/nvidia.yaml": nvidiaSpec}, want: true},
		"Containerd17Off": {reason: "A version 2 configuration (containerd 1.7) resolves no CDI device unless enable_cdi says so.",
			files: map[string]string{"etc/cdi/nvidia.yaml": nvidiaSpec, "etc/containerd/config.toml": "version = 2\n"}},
		"Containerd17On": {reason: "containerd 1.7 with enable_cdi = true.",
			files: map[string]string{"etc/cdi/nvidia.yaml": nvidiaSpec,
				"etc/containerd/config.toml": "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\n"}, want: true},
		"Containerd2Off": {reason: "containerd 2 with CDI turned off.",
			files: map[string]string{"etc/cdi/nvidia.yaml": nvidiaSpec,
				"etc/containerd/config.toml": "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\nenable_cdi = false\n"}},
		"SpecDirs": {reason: "The specs are read where cdi_spec_dirs says, not in the default directories.",
			files: map[string]string{"opt/cdi/nvidia.yaml": nvidiaSpec,
				"etc/containerd/config.toml": "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\ncdi_spec_dirs = ['/opt/cdi']\n"}, want: true},
		"Imported": {reason: "A drop-in the configuration imports wins over it.",
			files: map[string]string{"etc/cdi/nvidia.yaml": nvidiaSpec,
				"etc/containerd/config.toml":     "version = 2\nimports = ['conf.d/*.toml']\n",
				"etc/containerd/conf.d/cdi.toml": "[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\n"}, want: true},
		"ConfigDir": {reason: "GPUSTACK_CONTAINERD_CONFIG_DIR names where the configuration is (k3s keeps its own).",
			files: map[string]string{"etc/cdi/nvidia.yaml": nvidiaSpec,
				"etc/containerd/config.toml":             "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\n",
				"var/lib/rancher/containerd/config.toml": "version = 2\n"},
			dir: "/var/lib/rancher/containerd"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for path, data := range tc.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, path), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Injection(func(k string) string {
				switch k {
				case "GPUSTACK_NVIDIA_DEVICE_INJECTION_STRATEGY":
					return InjectAuto
				case EnvContainerdConfigDir:
					return tc.dir
				}
				return ""
			}, root)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got["nvidia"]); diff != "" {
				t.Errorf("%s\nInjection(auto)[nvidia]: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
