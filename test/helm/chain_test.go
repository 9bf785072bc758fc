package helm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/internal/kueueconfig"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs"
	"github.com/gpustack/gpustack-operator/providers/rdma"
	"github.com/gpustack/gpustack-operator/vendors"
)

// appVersion is the chart's appVersion, the operator image's tag.
func appVersion(t *testing.T) string {
	t.Helper()
	return chartAppVersion(t, chart)
}

// chartAppVersion is the appVersion of the chart in dir.
func chartAppVersion(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c.AppVersion
}

// TestTemplateChain renders the chain the chart brings up by default: Kueue from its own chart in the release's
// namespace, configured with everything kueueconfig.Check asks for, its Pod webhook kept off the system
// namespaces, and the worker checking that configuration; NFD from its own chart (nfd-master and nfd-worker)
// in its privileged namespace. With both switched off, nothing of theirs is rendered and the worker checks
// the Kueue of kueueNamespace.
func TestTemplateChain(t *testing.T) {
	objs := render(t)
	cm := convert[corev1.ConfigMap](t, objs["ConfigMap/"+namespace+"/"+kueueconfig.ConfigMap])
	cfg, err := kueueconfig.Parse([]byte(cm.Data[kueueconfig.ConfigKey]))
	if err != nil {
		t.Fatalf("the chart's Kueue configuration: %v\n%s", err, cm.Data[kueueconfig.ConfigKey])
	}
	if missing := kueueconfig.Check(cfg); len(missing) != 0 {
		t.Errorf("the chart's Kueue configuration lacks what the operator needs: %v", missing)
	}
	if icm := cfg.InternalCertManagement; icm == nil || icm.WebhookServiceName == nil || *icm.WebhookServiceName != "kueue-webhook-service" {
		t.Errorf("Kueue manages its webhook certificate for the Service kueue-webhook-service: %+v", icm)
	}
	kueue := convert[appsv1.Deployment](t, objs["Deployment/"+namespace+"/kueue-controller-manager"]).Spec.Template.Spec
	if got := kueue.Containers[0].Image; got != "registry.k8s.io/kueue/kueue:v0.19.2" {
		t.Errorf("Kueue's image is %s, want the release built and tested here, registry.k8s.io/kueue/kueue:v0.19.2", got)
	}
	checkRestricted(t, kueue)
	if n := countKind(objs, "CustomResourceDefinition"); n < 10 {
		t.Errorf("Kueue's chart renders %d CRDs, want all of Kueue's", n)
	}
	// helm uninstall must not take every team's queues and Workloads with the release.
	for name, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" && o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s is not kept on uninstall (helm.sh/resource-policy: keep)", name)
		}
	}
	// Kueue's webhooks for Deployments and StatefulSets answer for integrations it does not run: failing closed,
	// they would block every rollout while Kueue is down; the Pod one must never judge the system namespaces.
	webhooks := convert[admissionv1.MutatingWebhookConfiguration](t, objs["MutatingWebhookConfiguration/"+namespace+"/kueue-mutating-webhook-configuration"])
	var pods *admissionv1.MutatingWebhook
	for i, w := range webhooks.Webhooks {
		if (strings.Contains(w.Name, "deployment") || strings.Contains(w.Name, "statefulset")) &&
			(w.FailurePolicy == nil || *w.FailurePolicy != admissionv1.Ignore) {
			t.Errorf("Kueue's webhook %s fails closed although its integration is off", w.Name)
		}
		if w.Name == "mpod.kb.io" {
			pods = &webhooks.Webhooks[i]
		}
	}
	if pods == nil || pods.NamespaceSelector == nil || len(pods.NamespaceSelector.MatchExpressions) != 1 ||
		!cmp.Equal(workerv1.SystemNamespaces(), pods.NamespaceSelector.MatchExpressions[0].Values) {
		t.Errorf("Kueue's Pod webhook keeps off %v: %+v", workerv1.SystemNamespaces(), pods)
	}
	// The chart's own Pods are made while Kueue's webhook may not answer yet (at install, or while Kueue is down):
	// every namespace the chart runs a workload in, its optional parts on, is one Kueue's Pod webhook never judges.
	for name, o := range render(t, "storage.enabled=true", "workerGateway.enabled=true", "cleanupOnUninstall=true") {
		switch o.GetKind() {
		case "Deployment", "DaemonSet", "StatefulSet", "Job":
			ns := o.GetNamespace()
			if ns == "" { // helm puts it in the release's
				ns = namespace
			}
			if !slices.Contains(workerv1.SystemNamespaces(), ns) {
				t.Errorf("%s runs in %s, which Kueue's Pod webhook judges: its Pods wait for Kueue", name, ns)
			}
		}
	}

	nfdNamespace := convert[corev1.Namespace](t, objs["Namespace/node-feature-discovery"])
	if nfdNamespace.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("nfd-worker reads the host, which only the privileged profile allows: %v", nfdNamespace.Labels)
	}
	master := convert[appsv1.Deployment](t, objs["Deployment/node-feature-discovery/gpustack-operator-nfd-master"])
	worker := convert[appsv1.DaemonSet](t, objs["DaemonSet/node-feature-discovery/gpustack-operator-nfd-worker"])
	for _, image := range []string{master.Spec.Template.Spec.Containers[0].Image, worker.Spec.Template.Spec.Containers[0].Image} {
		if image != "registry.k8s.io/nfd/node-feature-discovery:v0.19.0" {
			t.Errorf("NFD's image is %s, want v0.19.0", image)
		}
	}
	checkPCILabels(t, objs)
	for key := range objs {
		if strings.HasPrefix(key, "Deployment/node-feature-discovery/") && strings.Contains(key, "topology") {
			t.Errorf("%s is rendered; the topology updater is not used", key)
		}
	}

	for _, set := range [][]string{{"kueue.enabled=false", "nfd.enabled=false"}, {"kueue.enabled=false", "nfd.enabled=false", "kueueNamespace=queues"}} {
		objs := render(t, set...)
		for key, o := range objs {
			if strings.HasPrefix(o.GetLabels()["app.kubernetes.io/name"], "kueue") || strings.Contains(key, "node-feature-discovery") ||
				strings.HasPrefix(key, "CustomResourceDefinition/") {
				t.Errorf("%v still renders %s", set, key)
			}
		}
		want := "--kueue-config=kueue-system/kueue-manager-config"
		if contains(set, "kueueNamespace=queues") {
			want = "--kueue-config=queues/kueue-manager-config"
		}
		if args := convert[appsv1.Deployment](t, objs["Deployment/gpustack-operator-worker"]).Spec.Template.Spec.Containers[0].Args; !contains(args, want) {
			t.Errorf("%v: the worker checks the existing Kueue's configuration (%s): %v", set, want, args)
		}
	}
}

// checkPCILabels checks that nfd-worker's configuration labels every class of card the agents count by vendor
// alone, so the label NFD writes for a vendor's card is the one that vendor's agent DaemonSet selects.
func checkPCILabels(t *testing.T, objs map[string]*unstructured.Unstructured) {
	t.Helper()
	conf := convert[corev1.ConfigMap](t, objs["ConfigMap/node-feature-discovery/gpustack-operator-nfd-worker-conf"])
	var worker struct {
		Sources struct {
			PCI struct {
				DeviceClassWhitelist []string `json:"deviceClassWhitelist"`
				DeviceLabelFields    []string `json:"deviceLabelFields"`
			} `json:"pci"`
		} `json:"sources"`
	}
	if err := yaml.UnmarshalStrict([]byte(conf.Data["nfd-worker.conf"]), &worker); err != nil {
		t.Fatalf("nfd-worker.conf: %v\n%s", err, conf.Data["nfd-worker.conf"])
	}
	pci := worker.Sources.PCI
	if diff := cmp.Diff(pcisysfs.DefaultClassPrefixes, pci.DeviceClassWhitelist); diff != "" {
		t.Errorf("nfd-worker labels the PCI classes the agents count as accelerators\nclasses: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"vendor"}, pci.DeviceLabelFields); diff != "" {
		t.Errorf("nfd-worker names a PCI label by vendor alone\nfields: -want, +got:\n%s", diff)
	}
	// NFD's label of a device: pci-<its deviceLabelFields' values joined by _>.present.
	label := func(class, vendor string) string {
		return "feature.node.kubernetes.io/pci-" + strings.Join(labelFieldValues(pci.DeviceLabelFields, class, vendor), "_") + ".present"
	}
	for _, o := range (devicemanager.Deployment{Image: "agent"}).Objects() {
		ds, ok := o.(*appsv1.DaemonSet)
		mfr := ds.Labels["gpustack.ai/manufacturer"]
		if !ok || mfr == "" {
			continue
		}
		if mfr == devicemanager.RDMAAgent {
			checkRDMAAgentLabels(t, ds, label)
			continue
		}
		v, _ := vendors.Lookup(mfr)
		want := label("0302", v.PCIVendorID)
		if _, ok := ds.Spec.Template.Spec.NodeSelector[want]; !ok {
			t.Errorf("the %s agent selects %v; NFD labels its cards %s", mfr, ds.Spec.Template.Spec.NodeSelector, want)
		}
	}
}

// checkRDMAAgentLabels checks that the RDMA agent's node affinity has a term for the label NFD writes for each
// RDMA NIC vendor's Ethernet controller (0200) that no card vendor shares.
func checkRDMAAgentLabels(t *testing.T, ds *appsv1.DaemonSet, label func(class, vendor string) string) {
	t.Helper()
	keys := map[string]bool{}
	if a := ds.Spec.Template.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range term.MatchExpressions {
				if r.Operator == corev1.NodeSelectorOpIn {
					keys[r.Key] = true
				}
			}
		}
	}
	for _, id := range rdma.NICVendorIDs {
		if slices.ContainsFunc(vendors.All(), func(v vendors.Vendor) bool { return v.PCIVendorID == id }) {
			continue
		}
		if want := label("0200", id); !keys[want] {
			t.Errorf("the RDMA agent selects %v; NFD labels a NIC of vendor %s %s", keys, id, want)
		}
	}
}

// labelFieldValues returns the values of a PCI function of class and vendor for NFD's deviceLabelFields.
func labelFieldValues(fields []string, class, vendor string) []string {
	values := map[string]string{"class": class, "vendor": vendor, "device": "1eb8"}
	var out []string
	for _, f := range fields {
		out = append(out, values[f])
	}
	return out
}
