package deviceplugintest

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Grant is what one Allocate call gave one container for one resource.
type Grant struct {
	// Container and Resource name what was allocated.
	Container, Resource string
	// DeviceIDs are the devices handed out.
	DeviceIDs []string
	// Response is the plugin's answer: environment, mounts, device nodes.
	Response *pluginapi.ContainerAllocateResponse
}

// plugin is a registered plugin as the kubelet's device manager holds it: a connection, and the devices its
// ListAndWatch stream last listed.
type plugin struct {
	conn    *grpc.ClientConn
	client  pluginapi.DevicePluginClient
	options *pluginapi.DevicePluginOptions
	stop    context.CancelFunc

	mu      sync.Mutex
	devices []*pluginapi.Device
	// listed is closed once the first list arrived.
	listed chan struct{}
}

// dial connects to a plugin's socket and follows its ListAndWatch stream until closed.
func dial(socket string, options *pluginapi.DevicePluginOptions) (*plugin, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, errors.Wrapf(err, "cannot reach the plugin at %s", socket)
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &plugin{conn: conn, client: pluginapi.NewDevicePluginClient(conn), options: options, stop: stop, listed: make(chan struct{})}
	if p.options == nil {
		p.options = &pluginapi.DevicePluginOptions{}
	}
	go p.follow(ctx)
	return p, nil
}

func (p *plugin) follow(ctx context.Context) {
	stream, err := p.client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		return
	}
	first := true
	for {
		resp, err := stream.Recv()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.devices = resp.Devices
		p.mu.Unlock()
		if first {
			close(p.listed)
			first = false
		}
	}
}

func (p *plugin) close() {
	p.stop()
	_ = p.conn.Close()
}

// healthy returns the IDs of the healthy devices last listed, once a list arrived.
func (p *plugin) healthy(ctx context.Context) ([]string, error) {
	select {
	case <-p.listed:
	case <-ctx.Done():
		return nil, errors.New("the plugin has listed no devices")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, d := range p.devices {
		if d.Health == pluginapi.Healthy {
			ids = append(ids, d.ID)
		}
	}
	return ids, nil
}

// Capacity returns the healthy devices each registered plugin last listed, as the kubelet reports them in its
// Node's capacity; a plugin that has listed nothing yet is left out.
func (k *Kubelet) Capacity() map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int64{}
	for name, p := range k.plugins {
		select {
		case <-p.listed:
		default:
			continue
		}
		p.mu.Lock()
		for _, d := range p.devices {
			if d.Health == pluginapi.Healthy {
				out[name]++
			}
		}
		p.mu.Unlock()
	}
	return out
}

// Admit does what the kubelet's device manager does when it admits a Pod: for each container (init containers
// first) and each of its resources a plugin registered, it takes that many free devices, asks the plugin
// which it prefers, and calls Allocate with them. A Pod it cannot admit holds nothing afterwards.
func (k *Kubelet) Admit(ctx context.Context, pod *corev1.Pod) ([]Grant, error) {
	uid := string(pod.UID)
	// The kubelet knows the Pod, and its pod-resources API lists it, before it allocates its containers.
	k.mu.Lock()
	k.pods[uid] = &admitted{pod: pod.DeepCopy(), held: map[string]map[string][]string{}}
	k.mu.Unlock()
	var grants []Grant
	containers := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
	for _, c := range containers {
		names := make([]string, 0, len(c.Resources.Limits))
		for name := range c.Resources.Limits {
			names = append(names, string(name))
		}
		sort.Strings(names)
		for _, name := range names {
			k.mu.Lock()
			p := k.plugins[name]
			k.mu.Unlock()
			q := c.Resources.Limits[corev1.ResourceName(name)]
			if p == nil || q.Value() <= 0 {
				continue
			}
			g, err := k.allocate(ctx, uid, c.Name, name, p, int(q.Value()))
			if err != nil {
				k.Release(uid)
				return nil, errors.Wrapf(err, "container %s", c.Name)
			}
			g.Container = c.Name
			grants = append(grants, g)
		}
	}
	return grants, nil
}

// allocate reserves n free devices of the resource for the Pod, the plugin's preferred ones when it names a
// valid choice, and has the plugin allocate them.
func (k *Kubelet) allocate(ctx context.Context, uid, container, resource string, p *plugin, n int) (Grant, error) {
	healthy, err := p.healthy(ctx)
	if err != nil {
		return Grant{}, errors.Wrap(err, resource)
	}
	k.mu.Lock()
	used := map[string]bool{}
	for _, byResource := range k.inUse {
		for _, id := range byResource[resource] {
			used[id] = true
		}
	}
	var free []string
	for _, id := range healthy {
		if !used[id] {
			free = append(free, id)
		}
	}
	if len(free) < n {
		k.mu.Unlock()
		// The kubelet's own words.
		return Grant{}, errors.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", resource, n, len(free))
	}
	ids := free[:n]
	if p.options.GetPreferredAllocationAvailable {
		resp, err := p.client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{
			{AvailableDeviceIDs: free, AllocationSize: int32(n)}}})
		if err == nil && len(resp.ContainerResponses) == 1 && choice(resp.ContainerResponses[0].DeviceIDs, free, n) {
			ids = resp.ContainerResponses[0].DeviceIDs
		}
	}
	if k.inUse[uid] == nil {
		k.inUse[uid] = map[string][]string{}
	}
	k.inUse[uid][resource] = append(k.inUse[uid][resource], ids...)
	k.mu.Unlock()
	resp, err := p.client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}})
	if err != nil {
		return Grant{}, errors.Wrapf(err, "Allocate of %s %v", resource, ids)
	}
	if len(resp.ContainerResponses) != 1 {
		return Grant{}, errors.Errorf("Allocate of %s answered %d containers, want 1", resource, len(resp.ContainerResponses))
	}
	// As the kubelet's device manager, the container holds the devices once the plugin allocated them.
	k.mu.Lock()
	if a := k.pods[uid]; a != nil {
		if a.held[container] == nil {
			a.held[container] = map[string][]string{}
		}
		a.held[container][resource] = append(a.held[container][resource], ids...)
	}
	k.mu.Unlock()
	return Grant{Resource: resource, DeviceIDs: ids, Response: resp.ContainerResponses[0]}, nil
}

// Release frees the devices of a Pod that is gone or has ended.
func (k *Kubelet) Release(uid string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.inUse, uid)
	delete(k.pods, uid)
}

// choice reports whether ids are n distinct devices of free.
func choice(ids, free []string, n int) bool {
	if len(ids) != n {
		return false
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] || !slices.Contains(free, id) {
			return false
		}
		seen[id] = true
	}
	return true
}
