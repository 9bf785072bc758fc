package deviceplugintest

import (
	"context"
	"net"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// admitted is a Pod the kubelet admitted or is admitting, with the devices each container holds, by resource.
type admitted struct {
	pod  *corev1.Pod
	held map[string]map[string][]string
}

// podResources serves the kubelet's pod-resources API from what Admit allocated.
type podResources struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	k *Kubelet
}

// ServePodResources serves the kubelet's pod-resources API on socket until the returned stop is called, as
// the kubelet does: List names every Pod it admitted or is admitting, each app container with the devices it
// holds so far.
func (k *Kubelet) ServePodResources(socket string) (stop func(), err error) {
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, errors.Wrap(err, "cannot listen on the pod-resources socket")
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, podResources{k: k})
	go func() { _ = srv.Serve(lis) }()
	return srv.Stop, nil
}

// List lists the Pods with their containers' devices.
func (s podResources) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	s.k.mu.Lock()
	defer s.k.mu.Unlock()
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for _, a := range s.k.pods {
		p := &podresourcesv1.PodResources{Namespace: a.pod.Namespace, Name: a.pod.Name}
		for _, c := range a.pod.Spec.Containers {
			cr := &podresourcesv1.ContainerResources{Name: c.Name}
			for resource, ids := range a.held[c.Name] {
				cr.Devices = append(cr.Devices, &podresourcesv1.ContainerDevices{ResourceName: resource, DeviceIds: ids})
			}
			p.Containers = append(p.Containers, cr)
		}
		resp.PodResources = append(resp.PodResources, p)
	}
	return resp, nil
}
