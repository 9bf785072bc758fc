// Package deviceplugintest serves the kubelet's side of the device-plugin API for tests, over the real gRPC
// API, where no kubelet can run: registration, and, as the kubelet's device manager does when it admits a
// Pod, the device lists each plugin streams, a preferred allocation and Allocate.
package deviceplugintest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"google.golang.org/grpc"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Kubelet answers registrations on <Dir>/kubelet.sock, remembers them, and allocates devices of the
// registered plugins to Pods (Admit).
type Kubelet struct {
	pluginapi.UnimplementedRegistrationServer
	// Dir is the device-plugin directory.
	Dir string

	mu         sync.Mutex
	registered map[string]*pluginapi.RegisterRequest
	plugins    map[string]*plugin
	// inUse are the devices allocated to each Pod (by UID), by resource.
	inUse map[string]map[string][]string
	// pods are the Pods admitted or being admitted (by UID), with what each container holds.
	pods map[string]*admitted
	srv  *grpc.Server
}

// StartKubelet serves registration in dir.
func StartKubelet(dir string) (*Kubelet, error) {
	k := &Kubelet{Dir: dir}
	return k, k.start()
}

func (k *Kubelet) start() error {
	k.mu.Lock()
	k.registered = map[string]*pluginapi.RegisterRequest{}
	for _, p := range k.plugins {
		p.close()
	}
	k.plugins = map[string]*plugin{}
	if k.inUse == nil {
		k.inUse, k.pods = map[string]map[string][]string{}, map[string]*admitted{}
	}
	k.mu.Unlock()
	lis, err := net.Listen("unix", filepath.Join(k.Dir, "kubelet.sock"))
	if err != nil {
		return errors.Wrap(err, "cannot listen on kubelet.sock")
	}
	k.srv = grpc.NewServer()
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(lis) }()
	return nil
}

// Register records a plugin's registration and, as the kubelet does, connects to the plugin and follows the
// devices it lists.
func (k *Kubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	p, err := dial(filepath.Join(k.Dir, r.Endpoint), r.Options)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if old := k.plugins[r.ResourceName]; old != nil {
		old.close()
	}
	k.registered[r.ResourceName] = r
	k.plugins[r.ResourceName] = p
	return &pluginapi.Empty{}, nil
}

// Registered returns the registrations since the kubelet (last) started, by resource.
func (k *Kubelet) Registered() map[string]*pluginapi.RegisterRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]*pluginapi.RegisterRequest, len(k.registered))
	for name, r := range k.registered {
		out[name] = r
	}
	return out
}

// Restart does what a kubelet starting again does to its plugins: it removes every socket of the directory,
// plugins' included, and listens again, having forgotten every registration.
func (k *Kubelet) Restart() error {
	k.Stop()
	entries, err := os.ReadDir(k.Dir)
	if err != nil {
		return errors.Wrap(err, "cannot read the device-plugin directory")
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sock") {
			if err := os.Remove(filepath.Join(k.Dir, e.Name())); err != nil && !os.IsNotExist(err) {
				return errors.Wrap(err, "cannot remove a socket")
			}
		}
	}
	return k.start()
}

// Stop stops answering and disconnects from the plugins.
func (k *Kubelet) Stop() {
	k.srv.Stop()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.plugins {
		p.close()
	}
	k.plugins = map[string]*plugin{}
}
