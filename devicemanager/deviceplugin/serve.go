package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// SocketName is the file name of a resource's socket in the kubelet's device-plugin directory.
func SocketName(resource string) string {
	return "gpustack-" + strings.NewReplacer("/", "_", ".", "-").Replace(resource) + ".sock"
}

// Server is one plugin served on its socket.
type Server struct {
	socket string
	srv    *grpc.Server
	once   sync.Once
	done   chan struct{}
}

// Stop stops serving and removes the socket; it returns once both are done, so the plugin can be served
// again at once. Stopping twice does nothing more.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.srv.Stop()
		_ = os.Remove(s.socket)
		close(s.done)
	})
}

// Registered reports whether the plugin's socket is still where the kubelet found it. The kubelet removes
// every socket of its device-plugin directory when it starts again, and forgets the plugins: a plugin whose
// socket is gone must be served and registered again.
func (s *Server) Registered() bool {
	_, err := os.Stat(s.socket)
	return err == nil
}

// Serve starts a plugin of resource on its socket in dir (pluginapi.DevicePluginPath on a node), registers it
// with the kubelet listening on dir's kubelet.sock, with the options the plugin states, and serves until ctx
// ends or Stop is called. It returns once registered.
func Serve(ctx context.Context, dir, resource string, p pluginapi.DevicePluginServer) (*Server, error) {
	socket := filepath.Join(dir, SocketName(resource))
	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		return nil, errors.Wrapf(err, "cannot remove the old socket of %s", resource)
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot listen for %s", resource)
	}
	s := &Server{socket: socket, srv: grpc.NewServer(), done: make(chan struct{})}
	pluginapi.RegisterDevicePluginServer(s.srv, p)
	go func() { _ = s.srv.Serve(lis) }()
	go func() {
		select {
		case <-ctx.Done():
			s.Stop()
		case <-s.done:
		}
	}()
	opts, err := p.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err == nil {
		err = register(ctx, filepath.Join(dir, filepath.Base(pluginapi.KubeletSocket)), resource, filepath.Base(socket), opts)
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// register tells the kubelet about the plugin's resource and socket.
func register(ctx context.Context, kubeletSocket, resource, endpoint string, opts *pluginapi.DevicePluginOptions) error {
	conn, err := grpc.NewClient("unix://"+kubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return errors.Wrapf(err, "cannot reach the kubelet at %s", kubeletSocket)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: resource, Options: opts,
	})
	if err != nil {
		return errors.Wrapf(err, "cannot register %s with the kubelet", resource)
	}
	return nil
}
