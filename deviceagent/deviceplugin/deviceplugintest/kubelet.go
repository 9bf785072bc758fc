// Package deviceplugintest serves the kubelet's side of device-plugin registration for tests, over the real
// gRPC API, where no kubelet can run.
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

// Kubelet answers registrations on <Dir>/kubelet.sock and remembers them.
type Kubelet struct {
	pluginapi.UnimplementedRegistrationServer
	// Dir is the device-plugin directory.
	Dir string

	mu         sync.Mutex
	registered map[string]*pluginapi.RegisterRequest
	srv        *grpc.Server
}

// StartKubelet serves registration in dir.
func StartKubelet(dir string) (*Kubelet, error) {
	k := &Kubelet{Dir: dir}
	return k, k.start()
}

func (k *Kubelet) start() error {
	k.mu.Lock()
	k.registered = map[string]*pluginapi.RegisterRequest{}
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

// Register records a plugin's registration.
func (k *Kubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.registered[r.ResourceName] = r
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

// Stop stops answering.
func (k *Kubelet) Stop() { k.srv.Stop() }
