package deviceplugin

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpustack/gpustack-operator/envvar"
	"github.com/gpustack/gpustack-operator/providers"
)

// visibility names the variable each vendor's container runtime reads to expose cards, and whether it wants
// card UUIDs or indexes.
var visibility = map[string]struct {
	env    string
	byUUID bool
}{
	"nvidia":    {"NVIDIA_VISIBLE_DEVICES", true},
	"amd":       {"AMD_VISIBLE_DEVICES", false},
	"ascend":    {"ASCEND_VISIBLE_DEVICES", false},
	"cambricon": {"CAMBRICON_VISIBLE_DEVICES", false},
	"hygon":     {"HYGON_VISIBLE_DEVICES", false},
	"iluvatar":  {"IX_VISIBLE_DEVICES", false},
	"metax":     {"METAX_VISIBLE_DEVICES", false},
	"mthreads":  {"MTHREADS_VISIBLE_DEVICES", false},
	"thead":     {"PPU_VISIBLE_DEVICES", false},
}

// VisibilityEnv is the variable the vendor's container runtime reads to expose cards ("" for an unknown
// vendor).
func VisibilityEnv(vendor string) string { return visibility[vendor].env }

// Enforcer is a vendor's soft-slicing enforcer as Allocate mounts it: the libraries it preloads from the node's
// enforcer directory, in a subdirectory per runtime and major version (<Runtime>-<major>: cuda-13, cann-8).
type Enforcer struct {
	// Runtime names the card's runtime in the subdirectory's name.
	Runtime string
	// Libraries are the files preloaded, in order.
	Libraries []string
}

// EnforcerContainerDir is where a slice's container sees its enforcer's libraries.
const EnforcerContainerDir = "/usr/local/gpustack/lib"

// Enforcers are the soft-slicing enforcers by vendor, for the vendors whose slices are enforced.
var Enforcers = map[string]Enforcer{
	// HAMi-core (libvgpu.so) enforces the limits inside CUDA (or Iluvatar's CUDA-compatible corex).
	"nvidia":   {Runtime: "cuda", Libraries: []string{"libvgpu.so"}},
	"iluvatar": {Runtime: "corex", Libraries: []string{"libvgpu.so"}},
	"thead":    {Runtime: "hggc", Libraries: []string{"hggc_quota.so", "hgml_dlsym_hook.so"}},
	"amd":      {Runtime: "rocm", Libraries: []string{"libvrocm.so"}},
	"ascend":   {Runtime: "cann", Libraries: []string{"libvruntime.so"}},
}

// Budget is what one slice may use of its card.
type Budget struct {
	// MemoryMiB is the slice's memory.
	MemoryMiB int64
	// CoresPercent is the slice's share of the card's compute, 1 to 100.
	CoresPercent int64
}

// Runtime describes where the soft-slicing libraries live on the host, and how cards reach a container.
type Runtime struct {
	// LibDir is the host directory the libraries are staged in, per runtime subdirectory
	// (/var/lib/gpustack/operator/lib/cuda-13).
	LibDir string
	// StateDir is a host directory for per-slice files (Ascend's npu_info.config, ledgers of the enforcers).
	StateDir string
	// CDI holds the vendors whose cards Allocate names as CDI devices, in the annotation CDIAnnotation,
	// rather than in their visibility variable (Injection resolves GPUSTACK_<MFR>_DEVICE_INJECTION_STRATEGY).
	CDI map[string]bool
}

// EnvDataDir names the variable that says where the node's data directory is, DefaultDataDir by default: the
// agent keeps its tools' scratch, the enforcers' libraries and the slices' state there, and the containers it
// serves mount the enforcers from it, so it is the same path on the node and in the agent.
const EnvDataDir = "GPUSTACK_DATA_DIR"

// DefaultDataDir is the node's data directory when EnvDataDir is unset.
const DefaultDataDir = "/var/lib/gpustack"

// DataDirFromEnv reads EnvDataDir through getenv: DefaultDataDir when unset, else an absolute path (anything
// else is an error naming the variable).
func DataDirFromEnv(getenv func(string) string) (string, error) {
	return envvar.AbsPath(getenv, EnvDataDir, DefaultDataDir)
}

// RuntimeIn is the layout under the node's data directory data (DataDirFromEnv).
func RuntimeIn(data string) Runtime {
	return Runtime{LibDir: filepath.Join(data, "operator", "lib"), StateDir: filepath.Join(data, "operator", "slices")}
}

// WholeCards returns what a container needs to use whole cards or shares: the cards, made visible (the DRA
// drivers give a prepared claim the same).
func (rt Runtime) WholeCards(vendor string, cards []providers.Device) *pluginapi.ContainerAllocateResponse {
	ids := make([]string, len(cards))
	for i, c := range cards {
		ids[i] = strconv.Itoa(int(c.Index))
		if visibility[vendor].byUUID {
			ids[i] = c.UUID
		}
	}
	return rt.expose(vendor, ids)
}

// expose makes the devices (cards by the vendor's identifier, or partitions by their device names) visible to
// a container: named as CDI devices in the vendor's CDI annotation where the node injects through CDI, through
// the vendor's visibility variable otherwise.
func (rt Runtime) expose(vendor string, devices []string) *pluginapi.ContainerAllocateResponse {
	vis, ok := visibility[vendor]
	if !ok {
		return &pluginapi.ContainerAllocateResponse{Envs: map[string]string{}}
	}
	if kind := cdiKinds[vendor]; rt.CDI[vendor] && kind != "" {
		names := make([]string, len(devices))
		for i, d := range devices {
			names[i] = kind + "=" + d
		}
		// "void" keeps the vendor's runtime from exposing what an image's own variable asks for (CUDA's images
		// say NVIDIA_VISIBLE_DEVICES=all): the container gets the CDI devices and nothing else.
		return &pluginapi.ContainerAllocateResponse{Envs: map[string]string{vis.env: "void"},
			Annotations: map[string]string{CDIAnnotation(vendor): strings.Join(names, ",")}}
	}
	return &pluginapi.ContainerAllocateResponse{Envs: map[string]string{vis.env: strings.Join(devices, ",")}}
}

// sliceFor returns what a container needs to use a slice of the card: the card made visible, and the vendor's
// soft-slicing enforcer loaded with the slice's limits. key names the slice for its per-slice files.
func (rt Runtime) sliceFor(card providers.Device, b Budget, key string) (*pluginapi.ContainerAllocateResponse, error) {
	if b.MemoryMiB <= 0 || b.MemoryMiB > card.MemoryMiB && card.MemoryMiB > 0 {
		return nil, errors.Errorf("a slice of %d MiB does not fit card %s of %d MiB", b.MemoryMiB, card.UUID, card.MemoryMiB)
	}
	if b.CoresPercent <= 0 || b.CoresPercent > 100 {
		b.CoresPercent = 100
	}
	enforcer, ok := Enforcers[card.Manufacturer]
	if !ok {
		return nil, errors.Errorf("soft slicing of %s cards is not supported by this agent yet", card.Manufacturer)
	}
	resp := rt.WholeCards(card.Manufacturer, []providers.Device{card})
	preload, err := rt.preload(enforcer, card)
	if err != nil {
		return nil, err
	}
	resp.Mounts = preload
	env := resp.Envs
	mem := strconv.FormatInt(b.MemoryMiB, 10)
	cores := strconv.FormatInt(b.CoresPercent, 10)
	switch card.Manufacturer {
	case "nvidia", "iluvatar":
		env["CUDA_DEVICE_MEMORY_LIMIT_0"] = mem + "m"
		env["CUDA_DEVICE_SM_LIMIT"] = cores
		env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
		env["LIBCUDA_LOG_LEVEL"] = "0"
	case "thead":
		env["HGGC_DEVICE_SM_LIMIT"] = cores
		env["HGGC_DEVICE_MEMORY_LIMIT_0"] = mem + "m"
		env["LIBHGGC_LOG_LEVEL"] = "1"
		ledger, err := rt.ledger(key)
		if err != nil {
			return nil, err
		}
		env["HGGC_LEDGER_PATH"] = ledger.ContainerPath
		resp.Mounts = append(resp.Mounts, ledger)
	case "amd":
		// The enforcer opens the card itself; the runtime must not expose it a second time.
		env["AMD_VISIBLE_DEVICES"] = "none"
		env["VROCM_DEVICE_MEMORY_LIMIT_0"] = mem + "m"
		ledger, err := rt.ledger(key)
		if err != nil {
			return nil, err
		}
		env["VROCM_LEDGER_PATH"] = ledger.ContainerPath
		resp.Mounts = append(resp.Mounts, ledger)
	case "ascend":
		config, err := rt.writeFile(key, "npu_info.config", fmt.Sprintf(
			"physical-npu-id=%d\nvirtual-npu-id=0\naicore-quota=%s\nmemory-quota=%s\nscheduling-policy=2\n", card.Index, cores, mem))
		if err != nil {
			return nil, err
		}
		env["ENPU_LOG_LEVEL"] = "1"
		env["ENPU_DSMI_HOOK"] = "1"
		resp.Mounts = append(resp.Mounts, &pluginapi.Mount{HostPath: config, ContainerPath: "/etc/gpustack/npu_info.config", ReadOnly: true})
	}
	return resp, nil
}

// Dir is the enforcer's library subdirectory for the card's runtime: cuda-13 for CUDA 13.0, cann-8 for CANN 8.
func (e Enforcer) Dir(card providers.Device) string {
	major, _, _ := strings.Cut(card.RuntimeVersion, ".")
	if major == "" {
		return e.Runtime
	}
	return e.Runtime + "-" + major
}

// Files are what the enforcer's directory holds: its libraries and the ld.so.preload that loads them.
func (e Enforcer) Files() []string { return append(slices.Clone(e.Libraries), "ld.so.preload") }

// preload mounts the enforcer's libraries for the card's runtime, and an ld.so.preload that loads them into
// every process of the container. It fails when one is not on the node (no enforcer image delivered them): the
// kubelet then refuses the Pod with that reason, where the container would fail at its mount, or run its slice
// unenforced.
func (rt Runtime) preload(e Enforcer, card providers.Device) ([]*pluginapi.Mount, error) {
	var mounts []*pluginapi.Mount
	for _, f := range e.Files() {
		host := filepath.Join(rt.LibDir, e.Dir(card), f)
		if _, err := os.Stat(host); err != nil {
			return nil, errors.Wrap(err, "the soft-slicing enforcer is not on this node (the chart's worker.deviceManager.enforcers.image delivers it)")
		}
		container := filepath.Join(EnforcerContainerDir, f)
		if f == "ld.so.preload" {
			container = "/etc/ld.so.preload"
		}
		mounts = append(mounts, &pluginapi.Mount{HostPath: host, ContainerPath: container, ReadOnly: true})
	}
	return mounts, nil
}

// ledger makes the slice's directory, where its enforcer keeps the slice's usage across the container's
// processes, and mounts it into the container at the same path, writable.
func (rt Runtime) ledger(key string) (*pluginapi.Mount, error) {
	dir := filepath.Join(rt.StateDir, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errors.Wrap(err, "cannot create the slice directory")
	}
	return &pluginapi.Mount{HostPath: dir, ContainerPath: dir}, nil
}

// writeFile writes one slice's file under the state directory and returns its host path.
func (rt Runtime) writeFile(key, name, content string) (string, error) {
	dir := filepath.Join(rt.StateDir, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", errors.Wrap(err, "cannot create the slice directory")
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		return "", errors.Wrapf(err, "cannot write %s", name)
	}
	return p, nil
}
