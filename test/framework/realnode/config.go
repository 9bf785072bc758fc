package realnode

import (
	"fmt"
	"strings"

	"github.com/gpustack/gpustack-operator/vendors"
)

// containerdConfig is the node's containerd (Debian 13's 1.7): its own root, state and socket (the node's
// mount namespace puts them at the standard paths), the CRI plugin with the pause image built here, CDI on (the
// DRA drivers write a prepared claim's edits as a CDI spec under /var/run/cdi, which the kubelet names to
// containerd), the CNI plugins of Debian's containernetworking-plugins, and a handler for each of the chart's
// RuntimeClasses.
const containerdConfig = `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "` + PauseImage + `"
  # This machine's root lacks CAP_SYS_RESOURCE, so runc may not lower a container's oom_score_adj below its
  # own; without this every sandbox fails ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
%s  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
`

// runtimeHandlers are containerd's handlers of the RuntimeClasses the chart creates (the vendors whose
// runtime injects their driver or devices). On a real node each is its vendor's container toolkit, which
// injects what a container's visibility variable names; a simulated node has no driver to inject, so each
// runs runc itself, and a Pod naming one starts as on a real node.
func runtimeHandlers() string {
	var b strings.Builder
	for _, v := range vendors.All() {
		if v.RuntimeInjects && v.RuntimeClass != "" {
			fmt.Fprintf(&b, "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.%s]\n      runtime_type = \"io.containerd.runc.v2\"\n", v.RuntimeClass)
		}
	}
	return b.String()
}

// cniConfig is the node's Pod network: a bridge whose gateway is the node, addresses from the node's PodCIDR
// (%s), hostPort mappings.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "gsk",
  "plugins": [
    {
      "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "%s"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

// kubeletConfig is the kubelet's configuration: client CA (%s), resolv.conf (%s) and cluster DNS (%s). Each
// setting off the defaults is what this machine needs: cgroup v1 (failCgroupV1), no systemd (cgroupfs), swap,
// a sparse disk that a full machine could starve before its own fill level says so (eviction), and images that
// cannot be pulled again once collected (imageGCHighThresholdPercent).
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /
failSwapOn: false
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
resolvConf: %s
clusterDNS: [%s]
clusterDomain: cluster.local
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
evictionHard:
  nodefs.available: "0%%"
  nodefs.inodesFree: "0%%"
  imagefs.available: "0%%"
imageGCHighThresholdPercent: 100
serializeImagePulls: false
`

// kubeProxyConfig is kube-proxy's configuration: kubeconfig (%s), node name (%s), bind address (%s) and the
// cluster's range (%s). Every Service connection is masqueraded, since this kernel may have no bridge
// netfilter to see a reply between two Pods of one bridge; conntrack's limits are left as the machine has them.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
bindAddress: %s
mode: iptables
clusterCIDR: %s
iptables:
  masqueradeAll: true
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
metricsBindAddress: 127.0.0.1:10249
`
