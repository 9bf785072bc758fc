package instancepod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestStatusPorts(t *testing.T) {
	ssh := workerv1.InstancePort{Name: "ssh", Port: 22}
	dns := workerv1.InstancePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, NodePort: 30053},
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 31053},
		{Name: "ssh", Port: 22, Protocol: corev1.ProtocolTCP, NodePort: 30022},
	}}}
	cases := map[string]struct {
		reason string
		ports  []workerv1.InstancePort
		access Access
		want   []workerv1.InstanceStatusPort
	}{
		"ByPortAndProtocol": {
			reason: "Each port gets the node port of the same port and protocol, TCP where it names none, in the Instance's order.",
			ports:  []workerv1.InstancePort{dns, ssh},
			access: ServiceAccess(svc, nil),
			want:   []workerv1.InstanceStatusPort{{InstancePort: dns, NodePort: 31053}, {InstancePort: ssh, NodePort: 30022}},
		},
		"NotExposedYet": {
			reason: "Before the Service is known, the ports show without node ports.",
			ports:  []workerv1.InstancePort{ssh},
			want:   []workerv1.InstanceStatusPort{{InstancePort: ssh}},
		},
		"NoPorts": {
			reason: "An Instance without ports has none.",
			access: ServiceAccess(svc, nil),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, StatusPorts(tc.ports, tc.access)); diff != "" {
				t.Errorf("%s\nStatusPorts(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
