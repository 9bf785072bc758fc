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
	// RDMAResource hands out one RDMA device of the node, whole.
	RDMAResource = "device.gpustack.ai/rdma"
	// RDMASharedResource hands out a share of the node's RDMA devices: every device with a port up, which any
	// number of containers may use at once (verbs devices are shared by design).
	RDMASharedResource = RDMAResource + ".shared"
)

// RDMASharesPerNode is how many containers may hold RDMASharedResource on one node, the RDMA shared device
// plugin's default (rdmaHcaMax).
const RDMASharesPerNode = 1000

// rdmaConnectionManager is the RDMA connection manager's character device, which a container needs beside the
// verbs devices to set up connections (librdmacm).
const rdmaConnectionManager = "rdma_cm"

// RDMAPlugin serves an RDMA resource to the kubelet: RDMAResource, one token per device, healthy while a port
// of it is up; or RDMASharedResource, RDMASharesPerNode tokens, healthy while the node can carry RDMA. Allocate
// gives the container the devices' verbs character devices and the connection manager's.
type RDMAPlugin struct {
	pluginapi.UnimplementedDevicePluginServer

	// Shared serves RDMASharedResource; RDMAResource otherwise.
	Shared bool
	// Devices returns the node's RDMA devices as last detected.
	Devices func() []rdma.Device
	// DevDir is where the character devices are; rdma.DevDir when empty.
	DevDir string

	changes
}

// Resource is the resource the plugin serves.
func (p *RDMAPlugin) Resource() string {
	if p.Shared {
		return RDMASharedResource
	}
	return RDMAResource
}

// GetDevicePluginOptions asks the kubelet for no extra calls: any device fits as well as another.
func (p *RDMAPlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the resource's tokens, and again whenever the devices change.
func (p *RDMAPlugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	for {
		changed := p.waitChange()
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: RDMATokens(p.Shared, p.Devices())}); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-changed:
		}
	}
}

// RDMATokens are the tokens an RDMA resource lists for the node's devices.
func RDMATokens(shared bool, devices []rdma.Device) []*pluginapi.Device {
	health := func(up bool) string {
		if up {
			return pluginapi.Healthy
		}
		return pluginapi.Unhealthy
	}
	var out []*pluginapi.Device
	if !shared {
		for _, d := range devices {
			out = append(out, &pluginapi.Device{ID: d.Name, Health: health(d.Active)})
		}
		return out
	}
	if len(devices) == 0 {
		return nil
	}
	for i := range RDMASharesPerNode {
		out = append(out, &pluginapi.Device{ID: fmt.Sprintf("rdma-share-%d", i), Health: health(rdma.Capable(devices))})
	}
	return out
}

// Allocate hands each container its devices' verbs character devices (a share: every device with a port up)
// and the connection manager's, where the node has one.
func (p *RDMAPlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	dir := p.DevDir
	if dir == "" {
		dir = rdma.DevDir
	}
	byName := map[string]rdma.Device{}
	var active []rdma.Device
	for _, d := range p.Devices() {
		byName[d.Name] = d
		if d.Active {
			active = append(active, d)
		}
	}
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.ContainerRequests {
		devices := active
		if !p.Shared {
			devices = nil
			for _, id := range cr.DevicesIds {
				d, ok := byName[id]
				if !ok {
					return nil, errors.Errorf("cannot allocate %s: the node has no RDMA device %s", RDMAResource, id)
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
