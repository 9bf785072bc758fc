package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
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

// Serve starts the plugin on its socket in dir (pluginapi.DevicePluginPath on a node), registers it with the
// kubelet listening on dir's kubelet.sock, and serves until ctx ends. It returns once registered; the
// returned channel reports the server's end.
func Serve(ctx context.Context, dir string, p *Plugin) (<-chan error, error) {
	socket := filepath.Join(dir, SocketName(p.Resource.Name))
	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		return nil, errors.Wrapf(err, "cannot remove the old socket of %s", p.Resource.Name)
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot listen for %s", p.Resource.Name)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	go func() {
		<-ctx.Done()
		srv.Stop()
		_ = os.Remove(socket)
	}()
	if err := register(ctx, filepath.Join(dir, filepath.Base(pluginapi.KubeletSocket)), p.Resource.Name, filepath.Base(socket)); err != nil {
		srv.Stop()
		return nil, err
	}
	return done, nil
}

// register tells the kubelet about the plugin's resource and socket.
func register(ctx context.Context, kubeletSocket, resource, endpoint string) error {
	conn, err := grpc.NewClient("unix://"+kubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return errors.Wrapf(err, "cannot reach the kubelet at %s", kubeletSocket)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: resource,
		Options: &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true},
	})
	if err != nil {
		return errors.Wrapf(err, "cannot register %s with the kubelet", resource)
	}
	return nil
}
