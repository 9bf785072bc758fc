package deviceplugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpustack/gpustack-operator/providers/rdma"
)

// The RDMA resources: not an accelerator family, so never charged in credits.
const (
	// RDMAResource hands out one RDMA device of a physical function of the node, whole.
	RDMAResource = "device.gpustack.ai/rdma"
	// RDMASharedResource hands out a share of the node's physical RDMA devices: every one with a port up, which
	// any number of containers may use at once (verbs devices are shared by design).
	RDMASharedResource = RDMAResource + ".shared"
	// RDMAPartitionedResource hands out one RDMA device of an SR-IOV virtual function: a slice of a NIC the
	// NIC itself isolates (its own queues, its own VLAN or partition key).
	RDMAPartitionedResource = RDMAResource + ".partitioned"
)

// RDMAKind is which of the RDMA resources a plugin serves.
type RDMAKind int

// The RDMA kinds.
const (
	// RDMAWhole serves RDMAResource.
	RDMAWhole RDMAKind = iota
	// RDMAShared serves RDMASharedResource.
	RDMAShared
	// RDMAPartitioned serves RDMAPartitionedResource.
	RDMAPartitioned
)

// RDMAKinds are the kinds the agent serves for a node's devices: whole and shared where a physical function
// has one, partitioned where a virtual function has one.
func RDMAKinds(devices []rdma.Device) []RDMAKind {
	var out []RDMAKind
	if len(rdma.Physical(devices)) > 0 {
		out = append(out, RDMAWhole, RDMAShared)
	}
	if len(rdma.Virtual(devices)) > 0 {
		out = append(out, RDMAPartitioned)
	}
	return out
}

// Resource is the resource a plugin of the kind serves.
func (k RDMAKind) Resource() string {
	switch k {
	case RDMAShared:
		return RDMASharedResource
	case RDMAPartitioned:
		return RDMAPartitionedResource
	}
	return RDMAResource
}

// RDMASharesPerNode is how many containers may hold RDMASharedResource on one node, the RDMA shared device
// plugin's default (rdmaHcaMax).
const RDMASharesPerNode = 1000

// rdmaConnectionManager is the RDMA connection manager's character device, which a container needs beside the
// verbs devices to set up connections (librdmacm).
const rdmaConnectionManager = "rdma_cm"

// RDMAPlugin serves an RDMA resource to the kubelet: RDMAResource (RDMAPartitionedResource), one token per
// device of a physical (virtual) function, healthy while a port of it is up; or RDMASharedResource,
// RDMASharesPerNode tokens, healthy while a physical device has a port up. Allocate gives the container the
// devices' verbs character devices and the connection manager's.
type RDMAPlugin struct {
	pluginapi.UnimplementedDevicePluginServer

	// Kind is the resource it serves.
	Kind RDMAKind
	// Devices returns the node's RDMA devices as last detected.
	Devices func() []rdma.Device
	// DevDir is where the character devices are; rdma.DevDir when empty.
	DevDir string

	changes
}

// Resource is the resource the plugin serves.
func (p *RDMAPlugin) Resource() string { return p.Kind.Resource() }

// GetDevicePluginOptions asks the kubelet for no extra calls: any device fits as well as another.
func (p *RDMAPlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the resource's tokens, and again whenever the devices change.
func (p *RDMAPlugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	for {
		changed := p.waitChange()
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: RDMATokens(p.Kind, p.Devices())}); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-changed:
		}
	}
}

// RDMATokens are the tokens the resource of kind lists for the node's devices.
func RDMATokens(kind RDMAKind, devices []rdma.Device) []*pluginapi.Device {
	health := func(up bool) string {
		if up {
			return pluginapi.Healthy
		}
		return pluginapi.Unhealthy
	}
	var out []*pluginapi.Device
	if kind != RDMAShared {
		for _, d := range kindDevices(kind, devices) {
			out = append(out, &pluginapi.Device{ID: d.Name, Health: health(d.Active)})
		}
		return out
	}
	physical := rdma.Physical(devices)
	if len(physical) == 0 {
		return nil
	}
	for i := range RDMASharesPerNode {
		out = append(out, &pluginapi.Device{ID: fmt.Sprintf("rdma-share-%d", i), Health: health(rdma.Capable(physical))})
	}
	return out
}

// kindDevices are the devices a resource of kind hands out: the virtual functions' for partitioned, the
// physical functions' otherwise.
func kindDevices(kind RDMAKind, devices []rdma.Device) []rdma.Device {
	if kind == RDMAPartitioned {
		return rdma.Virtual(devices)
	}
	return rdma.Physical(devices)
}

// Allocate hands each container its devices' verbs character devices (a share: every physical device with a
// port up) and the connection manager's, where the node has one.
func (p *RDMAPlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	dir := p.DevDir
	if dir == "" {
		dir = rdma.DevDir
	}
	byName := map[string]rdma.Device{}
	var active []rdma.Device
	for _, d := range kindDevices(p.Kind, p.Devices()) {
		byName[d.Name] = d
		if d.Active {
			active = append(active, d)
		}
	}
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		devices := active
		if p.Kind != RDMAShared {
			devices = nil
			for _, id := range cr.DevicesIds {
				d, ok := byName[id]
				if !ok {
					return nil, errors.Errorf("cannot allocate %s: the node has no RDMA device %s of that kind", p.Resource(), id)
				}
				devices = append(devices, d)
			}
		}
		var names []string
		for _, d := range devices {
			names = append(names, d.Verbs...)
		}
		if len(names) == 0 {
			return nil, errors.Errorf("cannot allocate %s: no RDMA device of the node has a verbs device", p.Resource())
		}
		if _, err := os.Stat(filepath.Join(dir, rdmaConnectionManager)); err == nil {
			names = append(names, rdmaConnectionManager)
		}
		car := &pluginapi.ContainerAllocateResponse{}
		for _, n := range names {
			// The container sees the devices where the node has them, whatever DevDir the agent reads.
			path := filepath.Join(rdma.DevDir, n)
			car.Devices = append(car.Devices, &pluginapi.DeviceSpec{ContainerPath: path, HostPath: path, Permissions: "rw"})
		}
		out.ContainerResponses = append(out.ContainerResponses, car)
	}
	return out, nil
}

// PreStartContainer is not asked for.
func (p *RDMAPlugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
