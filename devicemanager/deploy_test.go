package devicemanager_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/vendors"
)

// deploymentFromEnv is the agents' deployment from the test process's environment.
func deploymentFromEnv(t interface {
	Helper()
	Fatal(...any)
}) devicemanager.Deployment {
	t.Helper()
	d, err := devicemanager.DeploymentFromEnv("gpustack/gpustack-operator:test")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDeployment renders the agents' objects from the worker's environment.
func TestDeployment(t *testing.T) {
	t.Setenv("GPUSTACK_LEDGER_RELEASE_TERMINATED_PODS", "false")
	t.Setenv("GPUSTACK_NVIDIA_PCI_VENDOR_ID", "0302_10de")
	t.Setenv("UNRELATED", "x")
	t.Setenv("GPUSTACK_BIN", "") // the test harness's own variable; empty ones are not copied
	objs := deploymentFromEnv(t).Objects()
	selectors := map[string]string{}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			for k := range o.Spec.Template.Spec.NodeSelector {
				selectors[o.Name] = k
			}
			c := o.Spec.Template.Spec.Containers[0]
			if o.Name == devicemanager.CPUInfoDaemonSetName {
				if sc := c.SecurityContext; sc == nil || sc.Privileged != nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
					sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
					t.Errorf("%s runs unprivileged, as a user other than root, with no capability: %+v", o.Name, sc)
				}
				if len(c.Env) != 1 || c.Env[0].Name != "NODE_NAME" {
					t.Errorf("%s carries the node name alone: %+v", o.Name, c.Env)
				}
				continue
			}
			var env []string
			for _, e := range c.Env {
				env = append(env, e.Name)
			}
			if diff := cmp.Diff([]string{"NODE_NAME", "GPUSTACK_LEDGER_RELEASE_TERMINATED_PODS", "GPUSTACK_NVIDIA_PCI_VENDOR_ID"}, env); diff != "" {
				t.Errorf("%s carries the node name and the worker's GPUSTACK_* variables only: -want, +got:\n%s", o.Name, diff)
			}
			if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
				c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
				t.Errorf("%s is probed: alive on /healthz, ready on /readyz (cards published, plugins registered): %+v, %+v", o.Name, c.LivenessProbe, c.ReadinessProbe)
			}
			if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged || sc.RunAsUser == nil || *sc.RunAsUser != 0 {
				t.Errorf("%s runs privileged, as root (the image's user is not): %+v", o.Name, sc)
			}
		}
	}
	want := map[string]string{}
	for mfr, id := range map[string]string{"nvidia": "10de", "amd": "1002", "ascend": "19e5", "cambricon": "cabc",
		"hygon": "1d94", "iluvatar": "1e3e", "metax": "9999", "mthreads": "1ed5", "thead": "1ded"} {
		want[devicemanager.DaemonSetName(mfr)] = "feature.node.kubernetes.io/pci-" + id + ".present"
	}
	want[devicemanager.CPUInfoDaemonSetName] = "kubernetes.io/os"
	if diff := cmp.Diff(want, selectors); diff != "" {
		t.Errorf("One DaemonSet per manufacturer on the nodes with its PCI vendor, and the CPU reporter on every Linux node: -want, +got:\n%s", diff)
	}
}

// TestDeploymentPCIClass checks that a vendor ID given with its class (GPUSTACK_NVIDIA_PCI_VENDOR_ID=0302_10de)
// puts the agent on the nodes NFD labels with that class and vendor, and leaves the other vendors' as they are.
func TestDeploymentPCIClass(t *testing.T) {
	vendors.Configure(func(k string) string {
		if k == "GPUSTACK_NVIDIA_PCI_VENDOR_ID" {
			return "0302_10de"
		}
		return ""
	})
	t.Cleanup(func() { vendors.Configure(func(string) string { return "" }) })
	selectors := map[string]map[string]string{}
	for _, o := range deploymentFromEnv(t).Objects() {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			selectors[ds.Name] = ds.Spec.Template.Spec.NodeSelector
		}
	}
	want := map[string]map[string]string{
		devicemanager.DaemonSetName("nvidia"): {"feature.node.kubernetes.io/pci-0302_10de.present": "true"},
		devicemanager.DaemonSetName("amd"):    {"feature.node.kubernetes.io/pci-1002.present": "true"},
	}
	for name, sel := range want {
		if diff := cmp.Diff(sel, selectors[name]); diff != "" {
			t.Errorf("%s's node selector with GPUSTACK_NVIDIA_PCI_VENDOR_ID=0302_10de: -want, +got:\n%s", name, diff)
		}
	}
}

// TestEnforcerInstall checks that the agents copy an enforcer image the administrator names to the node's
// enforcer directory before they start, and run nothing more without one.
func TestEnforcerInstall(t *testing.T) {
	t.Setenv("GPUSTACK_DATA_DIR", "")
	cases := map[string]struct {
		reason string
		image  string
		want   []string
	}{
		"NoImage": {reason: "Without an enforcer image the agent starts alone."},
		"Image": {
			reason: "The image's libraries are copied, as root without any capability, through the agent's data volume into the directory Allocate mounts them from.",
			image:  "registry.example/hami-core:v2",
			want: []string{"install-enforcers", "registry.example/hami-core:v2", "/bin/sh", "-c",
				`mkdir -p "$0" && cp -R /gpustack/lib/. "$0"/`, "/var/lib/gpustack/operator/lib", "data:/var/lib/gpustack", "drop:ALL"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := devicemanager.Deployment{Image: "gpustack/gpustack-operator:test", EnforcerImage: tc.image}
			for _, o := range d.Objects() {
				ds := o.(*appsv1.DaemonSet)
				if ds.Name == devicemanager.CPUInfoDaemonSetName || ds.Name == devicemanager.DaemonSetName(devicemanager.RDMAAgent) {
					// The CPU reporter and the RDMA agent serve no slice (TestDeploymentPlacement checks the latter).
					continue
				}
				var got []string
				for _, c := range ds.Spec.Template.Spec.InitContainers {
					got = append(append(append(got, c.Name, c.Image), c.Command...), c.Args...)
					for _, m := range c.VolumeMounts {
						got = append(got, m.Name+":"+m.MountPath)
					}
					for _, drop := range c.SecurityContext.Capabilities.Drop {
						got = append(got, "drop:"+string(drop))
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("%s\n%s init containers: -want, +got:\n%s", tc.reason, ds.Name, diff)
				}
			}
		})
	}
}

var _ = It("applies the agents' DaemonSets to a real API server twice: the server accepts every object, and the second apply changes nothing", func() {
	d := deploymentFromEnv(GinkgoT())
	d.EnforcerImage = "registry.example/hami-core:v2"
	objs := d.Objects()
	ctx := context.Background()
	// The chart creates the agents' namespace.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workerv1.DeviceManagerNamespace, Labels: devicemanager.NamespaceLabels}}
	Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, ns))).To(Succeed())
	apply := func() map[string]string {
		versions := map[string]string{}
		for _, o := range objs {
			u, err := scheme.ForApply(o)
			Expect(err).NotTo(HaveOccurred())
			sent := u.DeepCopy()
			//nolint:staticcheck // client.Apply with an unstructured object is the documented way to server-side apply it.
			Expect(suite.Client.Patch(ctx, u, client.Apply, client.FieldOwner("gpustack-operator"), client.ForceOwnership)).
				To(Succeed(), "cannot apply %s %s", u.GetKind(), u.GetName())
			versions[u.GetKind()+"/"+u.GetName()] = u.GetResourceVersion()
			// The worker's field manager owns exactly what it sent, and sent no empty value.
			Expect(testenv.ZeroPaths(sent.Object)).To(BeEmpty(), "empty fields sent with %s %s", u.GetKind(), u.GetName())
			Expect(testenv.OwnershipDiff(u, "gpustack-operator", sent.Object)).To(BeEmpty(),
				"the fields gpustack-operator owns on %s %s: -sent and not owned, +owned and not sent", u.GetKind(), u.GetName())
		}
		return versions
	}
	first := apply()
	Expect(cmp.Diff(first, apply())).To(BeEmpty(), "applying the same objects again writes nothing: -first, +second resource versions")
})

// TestDeploymentPlacement asks, for nodes as NFD labels them, which agents the scheduler would place there (the
// DaemonSets' node selectors and required node affinity, as the scheduler reads them): a vendor's where its
// cards are, the RDMA agent only where an RDMA NIC is and no card.
func TestDeploymentPlacement(t *testing.T) {
	pci := func(ids ...string) map[string]string {
		out := map[string]string{"kubernetes.io/os": "linux"}
		for _, id := range ids {
			out["feature.node.kubernetes.io/pci-"+id+".present"] = "true"
		}
		return out
	}
	cases := map[string]struct {
		reason string
		labels map[string]string
		want   []string
	}{
		"CPUOnly": {
			reason: "A node with neither a card nor an RDMA NIC runs the CPU reporter alone.",
			labels: pci("8086"),
			want:   []string{devicemanager.CPUInfoDaemonSetName},
		},
		"MellanoxNoCard": {
			reason: "A node with a Mellanox NIC and no card runs the RDMA agent.",
			labels: pci("15b3"),
			want:   []string{devicemanager.CPUInfoDaemonSetName, devicemanager.DaemonSetName(devicemanager.RDMAAgent)},
		},
		"BroadcomNoCard": {
			reason: "Every NIC vendor the RDMA stack drives has a term of its own.",
			labels: pci("14e4", "8086"),
			want:   []string{devicemanager.CPUInfoDaemonSetName, devicemanager.DaemonSetName(devicemanager.RDMAAgent)},
		},
		"MellanoxAndNVIDIA": {
			reason: "Where a vendor's agent runs, it serves the NICs: no second agent registers the RDMA resources.",
			labels: pci("15b3", "10de"),
			want:   []string{devicemanager.CPUInfoDaemonSetName, devicemanager.DaemonSetName("nvidia")},
		},
		"NVIDIAAndAMD": {
			reason: "A node with two vendors' cards runs one agent, the first vendor's in the table, which serves both.",
			labels: pci("10de", "1002"),
			want:   []string{devicemanager.CPUInfoDaemonSetName, devicemanager.DaemonSetName("nvidia")},
		},
		"AMDAndThead": {
			reason: "Any two vendors: the earlier one's agent alone.",
			labels: pci("1ded", "1002"),
			want:   []string{devicemanager.CPUInfoDaemonSetName, devicemanager.DaemonSetName("amd")},
		},
		"HuaweiNIC": {
			reason: "Huawei's vendor ID is Ascend's too: the Ascend agent runs there, and finds the NIC.",
			labels: pci("19e5"),
			want:   []string{devicemanager.CPUInfoDaemonSetName, devicemanager.DaemonSetName("ascend")},
		},
	}
	objs := deploymentFromEnv(t).Objects()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: tc.labels}}
			var got []string
			for _, o := range objs {
				ds, ok := o.(*appsv1.DaemonSet)
				if !ok {
					continue
				}
				if fits, err := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: ds.Spec.Template.Spec}).Match(node); err != nil {
					t.Fatal(err)
				} else if fits {
					got = append(got, ds.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("%s\nthe agents placed on %v: -want, +got:\n%s", tc.reason, tc.labels, diff)
			}
		})
	}
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok && ds.Name == devicemanager.DaemonSetName(devicemanager.RDMAAgent) && len(ds.Spec.Template.Spec.InitContainers) > 0 {
			t.Errorf("the RDMA agent serves no slice and installs no enforcer: %+v", ds.Spec.Template.Spec.InitContainers)
		}
	}
}

// TestDeploymentDataDir checks that GPUSTACK_DATA_DIR moves the node's data directory the agents mount (at the
// same path, and inside the node's root) and the enforcers' install, and that a relative one is refused by name.
func TestDeploymentDataDir(t *testing.T) {
	t.Setenv("GPUSTACK_DATA_DIR", "/data/gpustack")
	d := deploymentFromEnv(t)
	d.EnforcerImage = "registry.example/hami-core:v2"
	for _, o := range d.Objects() {
		ds := o.(*appsv1.DaemonSet)
		if ds.Name == devicemanager.CPUInfoDaemonSetName {
			continue
		}
		pod := ds.Spec.Template.Spec
		var got []string
		for _, v := range pod.Volumes {
			if v.Name == "data" {
				got = append(got, "hostPath:"+v.HostPath.Path)
			}
		}
		for _, c := range append(append([]corev1.Container(nil), pod.InitContainers...), pod.Containers...) {
			for _, m := range c.VolumeMounts {
				if m.Name == "data" {
					got = append(got, c.Name+":"+m.MountPath)
				}
			}
			if len(c.Command) > 3 {
				got = append(got, c.Name+" installs to "+c.Command[3])
			}
		}
		want := []string{"hostPath:/data/gpustack", "device-manager:/data/gpustack", "device-manager:/host/data/gpustack"}
		if ds.Name != devicemanager.DaemonSetName(devicemanager.RDMAAgent) {
			want = append([]string{"hostPath:/data/gpustack", "install-enforcers:/data/gpustack",
				"install-enforcers installs to /data/gpustack/operator/lib"}, want[1:]...)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s with GPUSTACK_DATA_DIR=/data/gpustack: the data directory's volume and mounts: -want, +got:\n%s", ds.Name, diff)
		}
	}

	t.Setenv("GPUSTACK_DATA_DIR", "gpustack")
	if _, err := devicemanager.DeploymentFromEnv("gpustack/gpustack-operator:test"); err == nil ||
		err.Error() != `GPUSTACK_DATA_DIR="gpustack": want an absolute path` {
		t.Errorf("DeploymentFromEnv with a relative GPUSTACK_DATA_DIR: %v, want the variable named", err)
	}
}

// TestDeploymentKubeletSockets holds the agent's view of the kubelet's socket directories to the node's: the
// kubelet dials the very path a plugin names, so each directory is mounted at the path it has on the node.
func TestDeploymentKubeletSockets(t *testing.T) {
	d := devicemanager.Deployment{Image: "gpustack/gpustack-operator:test"}
	want := map[string]string{"device-plugins": "/var/lib/kubelet/device-plugins",
		"plugins-registry": "/var/lib/kubelet/plugins_registry", "plugins": "/var/lib/kubelet/plugins", "cdi": "/var/run/cdi"}
	for _, o := range d.Objects() {
		ds := o.(*appsv1.DaemonSet)
		if ds.Name == devicemanager.CPUInfoDaemonSetName {
			continue
		}
		mounts := map[string]string{}
		for _, m := range ds.Spec.Template.Spec.Containers[0].VolumeMounts {
			mounts[m.Name] = m.MountPath
		}
		got := map[string]string{}
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if _, ok := want[v.Name]; !ok {
				continue
			}
			got[v.Name] = v.HostPath.Path
			if mounts[v.Name] != v.HostPath.Path {
				got[v.Name] += " mounted at " + mounts[v.Name]
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the kubelet's socket directories, by volume: -want, +got:\n%s", ds.Name, diff)
		}
	}
}
