// Package realnode runs real Kubernetes nodes on this machine without Docker, as kind's nodes are but without a
// container engine: each node is a network namespace of its own, joined to a bridge of the machine by a veth
// pair, where one supervisor process (Run, in a mount namespace of its own) runs the node's containerd, with
// runc and the CNI plugins from Debian's packages, its kubelet and its kube-proxy, all built here. The node's
// state (the kubelet's and containerd's directories, CNI configuration, Pod logs) is bind-mounted over the
// standard paths inside that mount namespace, so every hostPath a DaemonSet names means the node's own.
//
// Addresses come from the benchmarking range (RFC 2544), which no network this machine reaches uses: the
// machine is 198.19.0.1 on the bridge, node i (from 1) is 198.19.0.(i+1) and its Pods get 198.19.i.0/24;
// Services get ServiceCIDR. The rest of 198.19.0.0/16 is a blackhole here, so nothing a Pod sends there before
// kube-proxy has programmed a Service leaves the machine.
package realnode

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	// Bridge is the machine's bridge the nodes are joined to.
	Bridge = "gsk0"
	// HostIP is the machine's address on Bridge, where the nodes reach the API server.
	HostIP = "198.19.0.1"
	// ClusterCIDR holds every node and Pod address.
	ClusterCIDR = "198.19.0.0/16"
	// ServiceCIDR holds the Services' cluster IPs.
	ServiceCIDR = "198.19.255.0/24"
	// APIServiceIP is the kubernetes Service's address, the first of ServiceCIDR.
	APIServiceIP = "198.19.255.1"
	// DNSIP is the cluster DNS address Pods are given: a Service address no DNS server answers yet, so a
	// lookup fails here rather than asking a resolver outside.
	DNSIP = "198.19.255.10"
	// maxNodes keeps node and Pod subnets below ServiceCIDR.
	maxNodes = 250
)

// NodeIP is the address of node i (from 1) on Bridge.
func NodeIP(i int) string { return fmt.Sprintf("198.19.0.%d", i+1) }

// PodCIDR is the subnet of node i's Pods.
func PodCIDR(i int) string { return fmt.Sprintf("198.19.%d.0/24", i) }

// Namespace is the network namespace of a node (ip netns names it under /run/netns).
func Namespace(node string) string { return "gsk-" + node }

// hostVeth is the machine's end of node i's veth pair (at most 15 characters).
func hostVeth(i int) string { return fmt.Sprintf("gskv%d", i) }

// SetUpHost makes the bridge with HostIP, and the blackhole route of ClusterCIDR, unless they exist. It is
// idempotent: a second cluster's start, or a start after a crash, finds them in place.
func SetUpHost(ctx context.Context) error {
	if err := ip(ctx, "link", "show", Bridge); err != nil {
		if err := ip(ctx, "link", "add", Bridge, "type", "bridge"); err != nil {
			return errors.Wrap(err, "cannot create the nodes' bridge")
		}
	}
	if err := ip(ctx, "addr", "replace", HostIP+"/24", "dev", Bridge); err != nil {
		return errors.Wrap(err, "cannot address the nodes' bridge")
	}
	if err := ip(ctx, "link", "set", Bridge, "up"); err != nil {
		return errors.Wrap(err, "cannot bring the nodes' bridge up")
	}
	return errors.Wrap(ip(ctx, "route", "replace", "blackhole", ClusterCIDR), "cannot route the cluster range nowhere")
}

// AddNode makes node i's network namespace, joined to the bridge, with routes to the Pods of the other nodes
// of its cluster, first to last (i among them). Several clusters share the bridge, each with its own range of
// indexes. A namespace left by a run that crashed is removed first.
func AddNode(ctx context.Context, name string, i, first, last int) error {
	if first < 1 || last > maxNodes || i < first || i > last {
		return errors.Errorf("node %s: index %d is not within its cluster's %d to %d, or beyond the %d nodes this machine's range holds",
			name, i, first, last, maxNodes)
	}
	ns := Namespace(name)
	RemoveNode(ctx, name, i)
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", hostVeth(i), "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", hostVeth(i), "master", Bridge, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "addr", "add", NodeIP(i) + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		// Services and anything else of the range go through the machine, which drops what no node owns.
		{"-n", ns, "route", "add", ClusterCIDR, "via", HostIP},
		// The machine reaches the node's Pods (the API server calls webhooks and kubelets there).
		{"route", "replace", PodCIDR(i), "via", NodeIP(i)},
	}
	for j := first; j <= last; j++ {
		if j != i {
			steps = append(steps, []string{"-n", ns, "route", "add", PodCIDR(j), "via", NodeIP(j)})
		}
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return errors.Wrapf(err, "cannot set up the network of node %s", name)
		}
	}
	// The node routes its Pods' packets, as a node's host does.
	return errors.Wrapf(run(ctx, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"),
		"cannot set up the network of node %s", name)
}

// RemoveNode removes node i's network namespace and the machine's route to its Pods; what is already gone
// is no error.
func RemoveNode(ctx context.Context, name string, i int) {
	_ = ip(ctx, "route", "del", PodCIDR(i))
	_ = ip(ctx, "link", "del", hostVeth(i))
	_ = ip(ctx, "netns", "del", Namespace(name))
}

func ip(ctx context.Context, args ...string) error { return run(ctx, "ip", args...) }

func run(ctx context.Context, name string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return errors.Wrapf(err, "%s %s: %s", name, strings.Join(args, " "), strings.TrimSpace(out.String()))
	}
	return nil
}
