package devicemanager

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/devicemanager/dra"
	"github.com/gpustack/gpustack-operator/package/rbac"
	"github.com/gpustack/gpustack-operator/providers/rdma"
	"github.com/gpustack/gpustack-operator/vendors"
)

// DaemonSetName is the agent DaemonSet of a manufacturer.
func DaemonSetName(vendor string) string { return "gpustack-operator-device-manager-" + vendor }

// Deployment says how to deploy the agents.
type Deployment struct {
	// Image runs `gpustack-operator device-manager`.
	Image string
	// Env is copied onto every agent; DeploymentFromEnv fills it with the worker's GPUSTACK_* variables.
	Env []corev1.EnvVar
	// DataDir is the node's data directory (deviceplugin.DataDirFromEnv): the agents mount it from the node at
	// the same path, where the enforcers' libraries, the slices' state and the vendor tools' scratch live;
	// deviceplugin.DefaultDataDir when empty. DeploymentFromEnv reads it from GPUSTACK_DATA_DIR.
	DataDir string
	// EnforcerImage, when set, holds the soft-slicing enforcers (HAMi-core's libvgpu.so and its kin) under
	// EnforcerImageDir, laid out as the node's enforcer directory is (cuda-12/libvgpu.so, cuda-12/ld.so.preload),
	// with a POSIX sh and cp: each agent copies it to that directory before it starts, so Allocate finds there
	// the libraries it mounts into a slice's containers.
	EnforcerImage string
}

// EnforcerImageDir is where an enforcer image holds its libraries.
const EnforcerImageDir = "/gpustack/lib"

// enforcerScript copies an enforcer image's libraries into the node's enforcer directory ($0), over what an
// older image left there.
const enforcerScript = `mkdir -p "$0" && cp -R ` + EnforcerImageDir + `/. "$0"/`

// DeploymentFromEnv returns a deployment of image that carries the process's non-empty GPUSTACK_* variables,
// sorted, and mounts the node's data directory they name. A data directory that is not an absolute path is an
// error naming the variable.
func DeploymentFromEnv(image string) (Deployment, error) {
	data, err := deviceplugin.DataDirFromEnv(os.Getenv)
	if err != nil {
		return Deployment{}, err
	}
	d := Deployment{Image: image, DataDir: data}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" && strings.HasPrefix(k, "GPUSTACK_") {
			d.Env = append(d.Env, corev1.EnvVar{Name: k, Value: v})
		}
	}
	sort.Slice(d.Env, func(i, j int) bool { return d.Env[i].Name < d.Env[j].Name })
	return d, nil
}

// dataDir is the node's data directory the agents mount.
func (d Deployment) dataDir() string {
	if d.DataDir == "" {
		return deviceplugin.DefaultDataDir
	}
	return d.DataDir
}

// NamespaceLabels are the labels of the agents' namespace, which the chart creates: its Pod Security label
// admits the agents' privileged Pods.
var NamespaceLabels = map[string]string{
	"pod-security.kubernetes.io/enforce": "privileged",
	"app.kubernetes.io/part-of":          "gpustack-operator",
}

// Objects returns the agents' DaemonSets, one per manufacturer on the nodes where NFD found that
// manufacturer's PCI vendor ID, and one for the nodes with an RDMA NIC and no card. One agent runs on a node:
// it detects and serves every vendor's cards there, so a node with two vendors' cards runs the agent of the
// first in the vendor table's order alone (a second would register the same resources with the kubelet and
// keep a ledger of its own). Their namespace, service account and roles ship with the chart, so the worker
// that applies these needs no right to grant roles.
func (d Deployment) Objects() []client.Object {
	var out []client.Object
	var earlier []corev1.NodeSelectorRequirement
	for _, v := range vendors.All() {
		// Not where an earlier vendor's agent runs; the first vendor's DaemonSet needs no affinity.
		var affinity *corev1.Affinity
		if len(earlier) > 0 {
			affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: slices.Clone(earlier)}}}}}
		}
		out = append(out, d.daemonSet(v.Key, func(pod *corev1.PodSpec) {
			pod.NodeSelector, pod.Affinity = map[string]string{pciLabel(v.PCILabel()): "true"}, affinity
		}))
		earlier = append(earlier, corev1.NodeSelectorRequirement{Key: pciLabel(v.PCILabel()), Operator: corev1.NodeSelectorOpDoesNotExist})
	}
	// The RDMA agent comes after every vendor's, and serves no slice: it needs no enforcer on its nodes.
	rdmaOnly := func(pod *corev1.PodSpec) { pod.Affinity, pod.InitContainers = rdmaOnlyNodes(earlier), nil }
	return append(out, d.daemonSet(RDMAAgent, rdmaOnly), d.cpuInfoDaemonSet())
}

// RDMAAgent is the key of the agent DaemonSet on the nodes that have an RDMA NIC and none of the vendors'
// cards: the same agent, which finds no card there and serves the node's RDMA devices alone (a vendor's agent
// serves them where the node has cards).
const RDMAAgent = "rdma"

// pciLabel is NFD's label of a node with a PCI function of the vendor (and class) label names.
func pciLabel(label string) string { return "feature.node.kubernetes.io/pci-" + label + ".present" }

// rdmaOnlyNodes selects the nodes with a PCI function of an RDMA NIC vendor (rdma.NICVendorIDs) and none that
// noCard requires absent (every vendor's card), one term per NIC vendor (the terms are ORed, a term's
// requirements ANDed). A NIC vendor that is also a card vendor (Huawei, Alibaba) is left out: that vendor's
// agent runs on its nodes and serves their NICs.
func rdmaOnlyNodes(noCard []corev1.NodeSelectorRequirement) *corev1.Affinity {
	cardLabels := map[string]bool{}
	for _, v := range vendors.All() {
		cardLabels[v.PCILabel()] = true
	}
	var terms []corev1.NodeSelectorTerm
	for _, id := range rdma.NICVendorIDs {
		if cardLabels[id] {
			continue
		}
		nic := corev1.NodeSelectorRequirement{Key: pciLabel(id), Operator: corev1.NodeSelectorOpIn, Values: []string{"true"}}
		terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: append([]corev1.NodeSelectorRequirement{nic}, noCard...)})
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}

// CPUInfoDaemonSetName is the DaemonSet that reports every node's CPU.
const CPUInfoDaemonSetName = "gpustack-operator-cpu-info"

// cpuInfoDaemonSet reports the CPU of every Linux node, CPU-only nodes included. It reads the host's
// /proc/cpuinfo through a read-only file mount (where an LXCFS-style container /proc would show another) and
// needs no privilege: it runs as the image's unprivileged user with every capability dropped, under an account
// that may write only its node's cpu-info NodeFeature.
func (d Deployment) cpuInfoDaemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "gpustack-cpu-info", "app.kubernetes.io/part-of": "gpustack-operator"}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.DeviceManagerNamespace, Name: CPUInfoDaemonSetName, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: rbac.ServiceAccountName("cpu-info"),
					NodeSelector:       map[string]string{corev1.LabelOSStable: "linux"},
					Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					PriorityClassName:  "system-node-critical",
					Containers: []corev1.Container{{
						Name: "cpu-info", Image: d.Image,
						Env: []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
						Args: []string{"cpu-info", "--cpuinfo=/host/proc/cpuinfo"},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
						VolumeMounts: []corev1.VolumeMount{{Name: "cpuinfo", MountPath: "/host/proc/cpuinfo", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "cpuinfo", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
						Path: "/proc/cpuinfo", Type: ptr.To(corev1.HostPathFile)}}}},
				},
			},
		},
	}
}

// MetricsPort is the port the agents serve their Prometheus metrics on.
const MetricsPort = 8080

// HostRoot is where an agent's container sees the node's root, read-only, where the drivers install their
// libraries and tools. The node's data directory is mounted writable both at its own path and inside the root,
// so a vendor tool run there (chroot) can leave its report in ToolScratch.
const HostRoot = "/host"

// ToolScratch is where the vendor tools an agent runs leave their reports, under the node's data directory.
func ToolScratch(dataDir string) string { return filepath.Join(dataDir, "tools") }

// daemonSet is the agent DaemonSet named after key (a manufacturer's, or RDMAAgent), placed on its nodes by
// place.
func (d Deployment) daemonSet(key string, place func(*corev1.PodSpec)) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "gpustack-device-manager", "app.kubernetes.io/part-of": "gpustack-operator",
		workerv1.LabelManufacturer: key}
	hostPath := func(name, path string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
	}
	// The runtime reads /var/run/cdi where it exists; a node that has none yet gets it.
	cdiSpecs := hostPath("cdi", dra.DefaultCDIDir)
	cdiSpecs.HostPath.Type = ptr.To(corev1.HostPathDirectoryOrCreate)
	env := append([]corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}, d.Env...)
	ds := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.DeviceManagerNamespace, Name: DaemonSetName(key), Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			// One node's agent at a time, so a bad image never takes every node's cards out of the ledger at once.
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: rbac.ServiceAccountName("device-manager"),
					// Accelerator nodes are often tainted for accelerator work only; the agent must run there.
					Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					PriorityClassName: "system-node-critical",
					Containers: []corev1.Container{{
						Name: "device-manager", Image: d.Image, Env: env,
						Args:  []string{"device-manager", "--metrics-bind-address=:" + strconv.Itoa(MetricsPort)},
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP}},
						// Ready once the cards are published and every device plugin is registered with the kubelet,
						// which a kubelet restart undoes until the agent registers again.
						LivenessProbe:  &corev1.Probe{ProbeHandler: httpGet("/healthz"), InitialDelaySeconds: 10, PeriodSeconds: 20},
						ReadinessProbe: &corev1.Probe{ProbeHandler: httpGet("/readyz"), PeriodSeconds: 5},
						// Reading every card and its driver, and the kubelet's plugin socket, needs the host's devices,
						// as root: the image's own user is the unprivileged one the worker runs as.
						SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0)},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "device-plugins", MountPath: "/var/lib/kubelet/device-plugins"},
							// Where the DRA drivers register with the kubelet, and their sockets it calls.
							{Name: "plugins-registry", MountPath: kubeletplugin.KubeletRegistryDir},
							{Name: "plugins", MountPath: kubeletplugin.KubeletPluginsDir},
							// Where the DRA drivers write a prepared claim's CDI spec for the container runtime.
							{Name: "cdi", MountPath: dra.DefaultCDIDir},
							// The kubelet's pod-resources API tells which container an allocation is for.
							{Name: "pod-resources", MountPath: filepath.Dir(deviceplugin.PodResourcesSocket), ReadOnly: true},
							{Name: "sys", MountPath: "/sys", ReadOnly: true},
							{Name: "dev", MountPath: "/dev"},
							{Name: "data", MountPath: d.dataDir()},
							// The node's root, where the vendors' drivers and tools are installed (NVML's library under
							// nvidia.DriverRoots); driver containers that start later show up in it.
							{Name: "host", MountPath: HostRoot, ReadOnly: true, MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
							{Name: "data", MountPath: HostRoot + d.dataDir()},
						},
					}},
					InitContainers: d.enforcerInstall(),
					Volumes: []corev1.Volume{
						hostPath("device-plugins", "/var/lib/kubelet/device-plugins"),
						hostPath("plugins-registry", kubeletplugin.KubeletRegistryDir), hostPath("plugins", kubeletplugin.KubeletPluginsDir),
						hostPath("pod-resources", filepath.Dir(deviceplugin.PodResourcesSocket)), hostPath("sys", "/sys"),
						hostPath("dev", "/dev"), hostPath("data", d.dataDir()), hostPath("host", "/"), cdiSpecs,
					},
				},
			},
		},
	}
	place(&ds.Spec.Template.Spec)
	return ds
}

// enforcerInstall is the agent's init container that copies the enforcer image to the node, none without one.
// It writes only the enforcer directory, through the agent's data volume, and needs no privilege.
func (d Deployment) enforcerInstall() []corev1.Container {
	if d.EnforcerImage == "" {
		return nil
	}
	return []corev1.Container{{
		Name: "install-enforcers", Image: d.EnforcerImage,
		Command: []string{"/bin/sh", "-c", enforcerScript, deviceplugin.RuntimeIn(d.dataDir()).LibDir},
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: d.dataDir()}},
	}}
}

// httpGet probes path on the agent's metrics port.
func httpGet(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("metrics")}}
}
