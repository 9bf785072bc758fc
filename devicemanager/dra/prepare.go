package dra

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
)

// DefaultCDIDir is where the drivers write a prepared claim's CDI spec: the directory of transient specs that
// containerd (enable_cdi) and CRI-O read by default.
const DefaultCDIDir = "/var/run/cdi"

// cdiVersion is the CDI specification the written specs follow: 0.5.0 is the first with a device node's
// hostPath, and every runtime with CDI reads it.
const cdiVersion = "0.5.0"

// CDIKind is the CDI kind of a driver's prepared claims (nvidia.gpustack.ai/claim).
func CDIKind(driver string) string { return driver + "/claim" }

// prepare gives one claim its cards: each device the claim was allocated from this driver's pool on this node
// must be a healthy card of the node that no container holds through the device plugins (the ledger says), and
// each request's cards get what the device plugin's Allocate gives those cards, written as one CDI device of
// the claim's spec.
func (p *driver) prepare(ctx context.Context, rc *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	name := rc.Namespace + "/" + rc.Name
	fail := func(format string, args ...any) kubeletplugin.PrepareResult {
		return kubeletplugin.PrepareResult{Err: errors.Errorf("ResourceClaim %s: "+format, append([]any{name}, args...)...)}
	}
	if rc.Status.Allocation == nil {
		return fail("not allocated")
	}
	ledger, err := p.drivers.ledger(ctx)
	if err != nil {
		return fail("cannot read the ledger of node %s: %v", p.node, err)
	}
	byDevice := map[string]providers.Device{}
	for _, c := range p.drivers.vendorCards(p.vendor) {
		byDevice[DeviceName(c)] = c
	}
	edits := p.drivers.Edits
	if edits == nil {
		edits = deviceplugin.Runtime{}.WholeCards
	}
	// A request's cards reach its containers as one CDI device: the vendor's visibility variable must name them
	// all, and a second device's variable would overwrite the first's.
	var out kubeletplugin.PrepareResult
	byRequest := map[string][]providers.Device{}
	first := map[string]int{} // each request's first device, which names the request's CDI devices
	for _, r := range rc.Status.Allocation.Devices.Results {
		if r.Driver != p.name || r.Pool != p.node {
			continue
		}
		card, ok := byDevice[r.Device]
		switch {
		case !ok:
			return fail("device %s is not a card of node %s", r.Device, p.node)
		case card.Unhealthy:
			return fail("card %s (device %s) of node %s is unhealthy", card.UUID, r.Device, p.node)
		}
		e := ledger[card.UUID]
		if heldByContainers(e) {
			return fail("card %s (device %s) of node %s is held by containers granted it through the device plugins", card.UUID, r.Device, p.node)
		}
		if others := slices.DeleteFunc(slices.Clone(e.ResourceClaims), func(c string) bool { return c == name }); len(others) > 0 {
			return fail("card %s (device %s) of node %s is allocated to ResourceClaim %s", card.UUID, r.Device, p.node, strings.Join(others, ", "))
		}
		d := kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device}
		if len(byRequest[r.Request]) == 0 {
			d.CDIDeviceIDs = []string{CDIKind(p.name) + "=" + cdiDeviceName(rc.UID, r.Request)}
			first[r.Request] = len(out.Devices)
		}
		byRequest[r.Request] = append(byRequest[r.Request], card)
		out.Devices = append(out.Devices, d)
	}
	spec := cdiSpec{Version: cdiVersion, Kind: CDIKind(p.name)}
	for _, request := range slices.Sorted(maps.Keys(byRequest)) {
		dev, ids := cdiDeviceOf(cdiDeviceName(rc.UID, request), edits(p.vendor, byRequest[request]))
		spec.Devices = append(spec.Devices, dev)
		named := &out.Devices[first[request]]
		named.CDIDeviceIDs = append(named.CDIDeviceIDs, ids...)
	}
	if err := writeSpec(p.drivers.specPath(p.name, string(rc.UID)), spec); err != nil {
		return fail("cannot write its CDI spec: %v", err)
	}
	return out
}

// cdiDeviceName names the CDI device of a claim's request: <claim UID>-<request>, the request's name with the
// "/" of a subrequest (request/subrequest) made a "-", which a CDI device name may not hold.
func cdiDeviceName(claim types.UID, request string) string {
	return string(claim) + "-" + strings.ReplaceAll(request, "/", "-")
}

// cdiSpec is a CDI specification file: the devices of one kind and what each adds to a container.
type cdiSpec struct {
	Version string      `json:"cdiVersion"`
	Kind    string      `json:"kind"`
	Devices []cdiDevice `json:"devices"`
}

type cdiDevice struct {
	Name           string   `json:"name"`
	ContainerEdits cdiEdits `json:"containerEdits"`
}

type cdiEdits struct {
	Env         []string        `json:"env,omitempty"`
	DeviceNodes []cdiDeviceNode `json:"deviceNodes,omitempty"`
	Mounts      []cdiMount      `json:"mounts,omitempty"`
}

type cdiDeviceNode struct {
	Path        string `json:"path"`
	HostPath    string `json:"hostPath,omitempty"`
	Permissions string `json:"permissions,omitempty"`
}

type cdiMount struct {
	HostPath      string   `json:"hostPath"`
	ContainerPath string   `json:"containerPath"`
	Options       []string `json:"options,omitempty"`
}

// cdiDeviceOf turns what the device plugin's Allocate gives a container into a CDI device of that name: its
// variables, device nodes and mounts. The CDI devices it names in annotations (the vendor's own spec, where the
// node injects through CDI) are returned as further CDI device IDs.
func cdiDeviceOf(name string, a *pluginapi.ContainerAllocateResponse) (cdiDevice, []string) {
	d := cdiDevice{Name: name}
	for _, k := range slices.Sorted(maps.Keys(a.Envs)) {
		d.ContainerEdits.Env = append(d.ContainerEdits.Env, k+"="+a.Envs[k])
	}
	for _, s := range a.Devices {
		d.ContainerEdits.DeviceNodes = append(d.ContainerEdits.DeviceNodes,
			cdiDeviceNode{Path: s.ContainerPath, HostPath: s.HostPath, Permissions: s.Permissions})
	}
	for _, m := range a.Mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		d.ContainerEdits.Mounts = append(d.ContainerEdits.Mounts,
			cdiMount{HostPath: m.HostPath, ContainerPath: m.ContainerPath, Options: []string{mode, "nosuid", "nodev", "bind"}})
	}
	var ids []string
	for _, k := range slices.Sorted(maps.Keys(a.Annotations)) {
		if strings.HasPrefix(k, "cdi.k8s.io/") {
			ids = append(ids, strings.Split(a.Annotations[k], ",")...)
		}
	}
	return d, ids
}

// writeSpec writes a CDI spec whole or not at all: the runtime may read the directory at any moment.
func writeSpec(path string, spec cdiSpec) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil { //nolint:gosec // the runtime, not only root, reads CDI specs.
		return err
	}
	return os.Rename(tmp, path)
}

// heldByContainers reports whether the ledger says containers hold the card through the device plugins.
func heldByContainers(e pools.Card) bool {
	return e.Mode != workerv1.AllocationNone && len(e.ResourceClaims) == 0
}
