package instancepod

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"

	"github.com/gpustack/gpustack-operator/pools"
)

// HostIPs returns the IPs of the node the Pod runs on, as its status gives them; none before it has a node.
func HostIPs(pod *corev1.Pod) []string {
	var out []string
	for _, ip := range pod.Status.HostIPs {
		out = append(out, ip.IP)
	}
	return out
}

// AccessAddresses returns where an Instance whose Pod runs on a node with these IPs is reached: the
// instance-access-static-address when set, else <host-ip>.<instance-access-wildcard-dns> for each host IP when
// that is set (a wildcard DNS such as nip.io resolves the name to the IP), else the host IPs themselves. None
// before the Pod has a node.
func AccessAddresses(hostIPs []string, static, wildcardDNS string) []string {
	if len(hostIPs) == 0 {
		return nil
	}
	if static != "" {
		return []string{static}
	}
	if wildcardDNS == "" {
		return append([]string(nil), hostIPs...)
	}
	out := make([]string, 0, len(hostIPs))
	for _, ip := range hostIPs {
		out = append(out, ip+"."+wildcardDNS)
	}
	return out
}

// Allocations returns the cards the device plugin recorded for the Pod's containers, sorted, without repeats.
func Allocations(pod *corev1.Pod) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range pools.PodClaims(pod) {
		for _, card := range c.Cards {
			if !seen[card] {
				seen[card] = true
				out = append(out, card)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Access is where an Instance is reached in the cluster that runs it: its access addresses and the node port of
// each port its Service exposes.
type Access struct {
	// Addresses are the Instance's access addresses there (AccessAddresses, with that cluster's settings).
	Addresses []string `json:"addresses,omitempty"`
	// Ports are the Service's ports with their node ports.
	Ports []workerv1.InstanceStatusPort `json:"ports,omitempty"`
}

// ServiceAccess is the Access of the Instance that svc exposes, reached at addresses.
func ServiceAccess(svc *corev1.Service, addresses []string) Access {
	a := Access{Addresses: addresses}
	for _, p := range svc.Spec.Ports {
		a.Ports = append(a.Ports, workerv1.InstanceStatusPort{
			InstancePort: workerv1.InstancePort{Port: p.Port, Protocol: p.Protocol, Name: p.Name}, NodePort: p.NodePort})
	}
	return a
}

// StatusPorts are the Instance's ports, each with the node port the Access gives the same port and protocol
// (none where it gives none).
func StatusPorts(ports []workerv1.InstancePort, a Access) []workerv1.InstanceStatusPort {
	var out []workerv1.InstanceStatusPort
	for _, p := range ports {
		sp := workerv1.InstanceStatusPort{InstancePort: p}
		for _, ap := range a.Ports {
			if ap.Port == p.Port && protocolOf(ap.Protocol) == protocolOf(p.Protocol) {
				sp.NodePort = ap.NodePort
			}
		}
		out = append(out, sp)
	}
	return out
}

// protocolOf is the protocol a port without one has: TCP.
func protocolOf(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}
