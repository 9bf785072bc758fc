package instancepod

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpustack/gpustack-operator/pools"
)

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
