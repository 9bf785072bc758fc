package deviceplugin

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"sigs.k8s.io/yaml"
)

// The ways GPUSTACK_<MFR>_DEVICE_INJECTION_STRATEGY may say a vendor's cards reach a container.
const (
	// InjectEnvVar names the cards in the vendor's visibility variable, which its container runtime reads
	// (NVIDIA_VISIBLE_DEVICES for nvidia-container-runtime): the default.
	InjectEnvVar = "envvar"
	// InjectCDIAnnotations names them as CDI devices in the annotation CDIAnnotation, which a container runtime
	// with CDI on (containerd's enable_cdi) resolves from the node's CDI specs.
	InjectCDIAnnotations = "cdi-annotations"
	// InjectAuto takes CDI where the node's containerd resolves CDI devices and has a spec of the vendor's kind
	// in its spec directories, the variable otherwise.
	InjectAuto = "auto"
)

// cdiKinds are the CDI kinds of the vendors whose cards may be injected through CDI (NVIDIA's, whose
// nvidia-ctk writes the spec), by vendor.
var cdiKinds = map[string]string{"nvidia": "nvidia.com/gpu"}

// CDISpecDirs are where a node's CDI specs are, as containerd reads them unless its cdi_spec_dirs say otherwise.
var CDISpecDirs = []string{"/etc/cdi", "/var/run/cdi"}

// CDIAnnotation is the annotation Allocate names a vendor's CDI devices in (cdi.k8s.io/gpustack-nvidia).
func CDIAnnotation(vendor string) string { return "cdi.k8s.io/gpustack-" + vendor }

// Injection reads GPUSTACK_<MFR>_DEVICE_INJECTION_STRATEGY of the vendors that can be injected through CDI
// and returns those whose cards Allocate names as CDI devices (Runtime.CDI). root is where the node's root
// is seen (the device manager's host mount), for auto to read the node's containerd configuration (in
// GPUSTACK_CONTAINERD_CONFIG_DIR, /etc/containerd by default) and CDI specs. An unknown strategy is an error
// naming the variable.
func Injection(getenv func(string) string, root string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, v := range slices.Sorted(maps.Keys(cdiKinds)) {
		name := "GPUSTACK_" + strings.ToUpper(v) + "_DEVICE_INJECTION_STRATEGY"
		switch s := strings.ToLower(strings.TrimSpace(getenv(name))); s {
		case "", InjectEnvVar:
		case InjectCDIAnnotations:
			out[v] = true
		case InjectAuto:
			c := readContainerdCDI(root, containerdConfigDir(getenv))
			if c.enabled && hasCDISpec(root, c.specDirs, cdiKinds[v]) {
				out[v] = true
			}
		default:
			return nil, errors.Errorf("%s=%q: want %s, %s or %s", name, s, InjectEnvVar, InjectCDIAnnotations, InjectAuto)
		}
	}
	return out, nil
}

// hasCDISpec reports whether one of the node's CDI specs (YAML or JSON, in dirs under root) declares devices
// of kind. A spec that cannot be read or parsed does not count: the runtime could not use it either.
func hasCDISpec(root string, dirs []string, kind string) bool {
	for _, dir := range dirs {
		for _, pattern := range []string{"*.yaml", "*.json"} {
			files, _ := filepath.Glob(filepath.Join(root, dir, pattern))
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					continue
				}
				var spec struct {
					Kind string `json:"kind"`
				}
				if yaml.Unmarshal(data, &spec) == nil && spec.Kind == kind {
					return true
				}
			}
		}
	}
	return false
}
