package deviceplugin

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// PodResourcesSocket is where the kubelet serves its pod-resources API, under its default root directory.
const PodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// podResourcesTimeout bounds one question to the kubelet: Allocate runs while the kubelet admits a Pod.
const podResourcesTimeout = 5 * time.Second

// KubeletHoldings is what the kubelet's pod-resources API says of the Pods it runs or is admitting: for each
// Pod ("namespace/name"), its containers with the resources they hold devices of. The kubelet lists the Pod
// it is admitting before it allocates its containers one by one, in their order, so the container an
// allocation is for is the first of that Pod's that holds none of the resource yet.
type KubeletHoldings map[string]map[string]map[string]bool

// knows reports whether the kubelet runs or admits the Pod.
func (h KubeletHoldings) knows(pod string) bool {
	_, ok := h[pod]
	return ok
}

// holds reports whether the kubelet allocated devices of the resource to the Pod's container.
func (h KubeletHoldings) holds(pod, container, resource string) bool {
	return h[pod][container][resource]
}

// ListPodResources asks the kubelet listening on socket which devices its Pods' containers hold.
func ListPodResources(ctx context.Context, socket string) (KubeletHoldings, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, errors.Wrapf(err, "cannot reach the kubelet's pod-resources API at %s", socket)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, podResourcesTimeout)
	defer cancel()
	resp, err := podresourcesv1.NewPodResourcesListerClient(conn).List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, errors.Wrapf(err, "cannot list the kubelet's pod resources at %s", socket)
	}
	out := KubeletHoldings{}
	for _, p := range resp.GetPodResources() {
		containers := map[string]map[string]bool{}
		for _, c := range p.GetContainers() {
			held := map[string]bool{}
			for _, d := range c.GetDevices() {
				if len(d.GetDeviceIds()) > 0 {
					held[d.GetResourceName()] = true
				}
			}
			containers[c.GetName()] = held
		}
		out[p.GetNamespace()+"/"+p.GetName()] = containers
	}
	return out, nil
}
