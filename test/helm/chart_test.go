// Package helm tests the Helm chart with the real Helm CLI: lint, the rendered objects for each option, and
// an install and uninstall on the local cluster.
package helm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	draCEL "k8s.io/dynamic-resource-allocation/cel"
	"sigs.k8s.io/yaml"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/devicemanager/dra"
	"github.com/gpustack/gpustack-operator/package/rbac"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/vendors"
)

const release, namespace = "gpustack-operator", "gpustack-system"

// chart is the chart's directory.
var chart = testenv.Path("package", "helm", "gpustack-operator")

// helm runs the Helm CLI from bin/ and returns its output; helmBin skips the test when it is not built.
func helm(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	bin, skip, err := testenv.BinDir("helm")
	if err != nil {
		t.Fatal(err)
	}
	if skip != "" {
		t.Skip(skip)
	}
	cmd := exec.Command(filepath.Join(bin, "helm"), args...)
	cmd.Env = append(os.Environ(), append([]string{"HELM_CACHE_HOME=" + t.TempDir(), "HELM_CONFIG_HOME=" + t.TempDir(),
		"HELM_DATA_HOME=" + t.TempDir()}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// render runs helm template with the values and returns the objects, by kind and name.
func render(t *testing.T, set ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", release, chart, "--namespace", namespace, "--kube-version", "1.36.3"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, nil, args...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	objs := map[string]*unstructured.Unstructured{}
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs[objectKey(u)] = u
		}
	}
}

// objectKey is how render files an object: Kind/name, or Kind/namespace/name when the template names a
// namespace (the objects of the device managers' namespace; the rest go to the release's).
func objectKey(u *unstructured.Unstructured) string {
	if u.GetNamespace() != "" {
		return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
	}
	return u.GetKind() + "/" + u.GetName()
}

func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	if u == nil {
		t.Fatal("object not rendered")
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLint lints the chart with its default values and with every option on.
func TestLint(t *testing.T) {
	for name, set := range map[string][]string{
		"Defaults": nil,
		"Options":  {"cleanupOnUninstall=true", "worker.certmanager.enabled=true", "worker.webhook.url=https://127.0.0.1:9443"},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", chart, "--namespace", namespace, "--kube-version", "1.36.3"}
			for _, s := range set {
				args = append(args, "--set", s)
			}
			if out, err := helm(t, nil, args...); err != nil || !strings.Contains(out, "0 chart(s) failed") {
				t.Errorf("helm lint: %v\n%s", err, out)
			}
		})
	}
}

// TestDependencies checks that the subcharts make chart copies into charts/ are the versions Chart.yaml names:
// helm installs whatever charts/ holds, so a version bumped in the Makefile and not in Chart.yaml (or the
// reverse) would go unseen, and `helm dependency list` would tell users "wrong version".
func TestDependencies(t *testing.T) {
	out, err := helm(t, nil, "dependency", "list", chart)
	if err != nil {
		t.Fatalf("helm dependency list: %v\n%s", err, out)
	}
	var listed int
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) != 4 || strings.TrimSpace(fields[0]) == "NAME" {
			continue
		}
		listed++
		if status := strings.TrimSpace(fields[3]); status != "unpacked" {
			t.Errorf("the chart's dependency %s %s is %q in charts/, want unpacked (the version Chart.yaml names)",
				strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1]), status)
		}
	}
	if listed != 2 {
		t.Errorf("helm dependency list listed %d dependencies, want 2 (Kueue and NFD):\n%s", listed, out)
	}
}

// TestTemplateWorker renders the worker: a restricted Pod running the worker behind its webhook Service, the
// device managers deployed with the same image, and exactly the rules generated from the code's RBAC markers.
// checkMemoryLimitPassed checks that a Go container is told its own memory limit, which its runtime's soft limit
// is set from.
func checkMemoryLimitPassed(t *testing.T, c corev1.Container) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == "CONTAINER_MEMORY_LIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
			e.ValueFrom.ResourceFieldRef.Resource == "limits.memory" && e.ValueFrom.ResourceFieldRef.ContainerName == "" {
			return
		}
	}
	t.Errorf("container %s is not given its memory limit in CONTAINER_MEMORY_LIMIT: %+v", c.Name, c.Env)
}

func TestTemplateWorker(t *testing.T) {
	objs := render(t)
	d := convert[appsv1.Deployment](t, objs["Deployment/gpustack-operator-worker"])
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	image := "docker.io/gpustack/gpustack-operator:" + appVersion(t)
	wantArgs := []string{"worker", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8080", "--webhook-port=9443", "--webhook-service=gpustack-operator-worker-webhook",
		"--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs", "--settings-api-port=8443", "--kueue-config=gpustack-system/kueue-manager-config", "--device-manager-image=" + image}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("worker args: -want, +got:\n%s", diff)
	}
	if c.Image != image || pod.ServiceAccountName != "gpustack-operator-worker" {
		t.Errorf("image %s, service account %s", c.Image, pod.ServiceAccountName)
	}
	checkRestricted(t, pod)
	checkMemoryLimitPassed(t, c)
	// Two replicas by default, spread over nodes, one kept through voluntary disruptions; they elect a leader.
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("worker replicas = %v, want 2", d.Spec.Replicas)
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("the replicas prefer different nodes: %+v", pod.Affinity)
	}
	pdb := convert[policyv1.PodDisruptionBudget](t, objs["PodDisruptionBudget/gpustack-operator-worker"])
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.Selector == nil ||
		!cmp.Equal(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("the worker's PodDisruptionBudget keeps one of its Pods: %+v", pdb.Spec)
	}
	if objs := render(t, "worker.replicas=1"); objs["PodDisruptionBudget/gpustack-operator-worker"] != nil {
		t.Error("a single replica gets a PodDisruptionBudget, which would block every node drain")
	}
	if _, ok := objs["Service/gpustack-operator-worker-webhook"]; !ok {
		t.Error("no webhook Service")
	}
	if _, ok := objs["Service/gpustack-operator-worker-metrics"]; !ok {
		t.Error("no metrics Service: the metrics are on by default")
	}
	// The settings API: an APIService to the webhook Service's settings-api port, which only a Service allows.
	api := objs["APIService/v1.settings.gpustack.ai"]
	if api == nil {
		t.Fatal("no APIService for settings.gpustack.ai/v1")
	}
	if got := fmt.Sprint(api.Object["spec"]); !strings.Contains(got, "name:gpustack-operator-worker-webhook") || !strings.Contains(got, "port:8443") {
		t.Errorf("the settings APIService names the webhook Service's port 8443: %s", got)
	}
	if objs := render(t, "worker.webhook.url=https://127.0.0.1:9443"); objs["APIService/v1.settings.gpustack.ai"] != nil ||
		slices.Contains(convert[appsv1.Deployment](t, objs["Deployment/gpustack-operator-worker"]).Spec.Template.Spec.Containers[0].Args, "--settings-api-port=8443") {
		t.Error("a webhook URL (no Service) gets a settings APIService, which can only name a Service")
	}
	// Every role, the agents' included, is the generated one; the agents' ship with the chart, so the worker
	// needs no right to grant roles.
	for _, r := range []struct{ key, component, kind, namespace string }{
		{"ClusterRole/gpustack-operator-worker", "worker", "ClusterRole", ""},
		{"Role/gpustack-operator-worker", "worker", "Role", namespace},
		{"Role/gpustack-device-manager/gpustack-operator-worker", "worker", "Role", workerv1.DeviceManagerNamespace},
		{"Role/kube-system/gpustack-operator-worker", "worker", "Role", "kube-system"},
		{"ClusterRole/gpustack-operator-device-manager", "device-manager", "ClusterRole", ""},
		{"Role/gpustack-operator-device-manager", "device-manager", "Role", namespace},
		{"Role/gpustack-operator-cpu-info", "cpu-info", "Role", namespace},
	} {
		got := convert[rbacv1.ClusterRole](t, objs[r.key])
		if diff := cmp.Diff(generatedRules(t, r.component, r.kind, r.namespace), got.Rules); diff != "" {
			t.Errorf("%s rules differ from package/rbac/%s: -want, +got:\n%s", r.key, r.component, diff)
		}
	}
	ns := convert[corev1.Namespace](t, objs["Namespace/"+workerv1.DeviceManagerNamespace])
	for k, v := range devicemanager.NamespaceLabels {
		if ns.Labels[k] != v {
			t.Errorf("the agents' namespace carries %s=%s: labels %v", k, v, ns.Labels)
		}
	}
	for _, account := range []string{"gpustack-operator-device-manager", "gpustack-operator-cpu-info"} {
		if objs["ServiceAccount/"+workerv1.DeviceManagerNamespace+"/"+account] == nil {
			t.Errorf("no service account %s in the agents' namespace", account)
		}
	}
	for name := range render(t, "worker.deviceManager.enabled=false") {
		if strings.Contains(name, "device-manager") {
			t.Errorf("%s is rendered although the device managers are off", name)
		}
	}
	// The 9 rules of policies/cel, the device managers' node scope, the Settings' fixed set, and the component
	// bounds unless turned off.
	bounds := []string{"gpustack-operator-bounds-gateway-secrets", "gpustack-operator-bounds-node-status",
		"gpustack-operator-bounds-pods", "gpustack-operator-bounds-system-namespaces", "gpustack-operator-bounds-token-secrets"}
	for _, name := range bounds {
		for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
			if objs[kind+"/"+name] == nil {
				t.Errorf("the chart renders no %s %s", kind, name)
			}
		}
	}
	if n := countKind(objs, "ValidatingAdmissionPolicy"); n != 11+len(bounds) {
		t.Errorf("the chart renders %d admission policies, want the 9 of policies/cel, the device managers' node scope, the Settings' fixed set and %d bounds", n, len(bounds))
	}
	if n := countKind(render(t, "componentBounds.enabled=false"), "ValidatingAdmissionPolicy"); n != 11 {
		t.Errorf("with componentBounds.enabled=false the chart renders %d admission policies, want 11", n)
	}
	scope, err := rbac.NodeScope()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range scope {
		want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		kind := strings.TrimPrefix(fmt.Sprintf("%T", o), "*v1.")
		got := objs[kind+"/"+o.GetName()]
		if got == nil {
			t.Errorf("the device managers' node scope %s %s is not rendered", kind, o.GetName())
			continue
		}
		if diff := cmp.Diff(want["spec"], got.Object["spec"]); diff != "" {
			t.Errorf("the rendered %s %s differs from package/rbac: -want, +got:\n%s", kind, o.GetName(), diff)
		}
	}
	for name := range objs {
		if strings.HasPrefix(name, "Job/") || strings.HasPrefix(name, "Certificate/") {
			t.Errorf("%s is rendered by default", name)
		}
	}
}

// TestTemplateOptions renders each option: the cleanup hook, cert-manager, a webhook URL, and an install into
// another namespace, which fails with a message saying which namespace to use.
// TestRuntimeClasses renders a RuntimeClass for each vendor whose runtime injects its driver or devices, as the
// vendors table says, and none when turned off.
func TestRuntimeClasses(t *testing.T) {
	var want, got []string
	for _, v := range vendors.All() {
		if v.RuntimeInjects {
			want = append(want, v.RuntimeClass+"->"+v.RuntimeClass)
		}
	}
	for _, u := range render(t) {
		if u.GetKind() == "RuntimeClass" {
			handler, _, _ := unstructured.NestedString(u.Object, "handler")
			got = append(got, u.GetName()+"->"+handler)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the chart's RuntimeClasses (name->handler) differ from the vendors table's: -want, +got:\n%s", diff)
	}
	for key := range render(t, "runtimeClasses.enabled=false") {
		if strings.HasPrefix(key, "RuntimeClass/") {
			t.Errorf("runtimeClasses.enabled=false still renders %s", key)
		}
	}
}

func TestTemplateOptions(t *testing.T) {
	objs := render(t, "cleanupOnUninstall=true")
	job := convert[unstructuredJob](t, objs["Job/gpustack-operator-cleanup"])
	if job.Metadata.Annotations["helm.sh/hook"] != "post-delete" || job.Spec.Template.Spec.Containers[0].Args[0] != "cleanup" {
		t.Errorf("the cleanup Job is not a post-delete hook running cleanup: %+v", job)
	}
	checkRestricted(t, job.Spec.Template.Spec)
	// The hook's rights go with it whether it succeeds or fails.
	for _, key := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		rights := convert[metav1.PartialObjectMetadata](t, objs[key+"/gpustack-operator-cleanup"])
		policy := strings.Split(rights.Annotations["helm.sh/hook-delete-policy"], ",")
		if !slices.Contains(policy, "hook-succeeded") || !slices.Contains(policy, "hook-failed") {
			t.Errorf("the cleanup hook's %s is not removed whether the hook succeeds or fails: hook-delete-policy %v", key, policy)
		}
	}
	for kind, ns := range map[string]string{"ClusterRole": "", "Role": namespace} {
		got := convert[rbacv1.ClusterRole](t, objs[kind+"/gpustack-operator-cleanup"])
		if diff := cmp.Diff(generatedRules(t, "cleanup", kind, ns), got.Rules); diff != "" {
			t.Errorf("cleanup %s rules differ from package/rbac/cleanup: -want, +got:\n%s", kind, diff)
		}
	}

	if objs := render(t); objs["StorageClass/local-path"] != nil {
		t.Error("the local-path provisioner is rendered by default; a cluster with storage keeps its own")
	}
	objs = render(t, "storage.enabled=true", "storage.storageClass.default=true", "storage.helperImage=example.com/sh:1")
	class := convert[storagev1.StorageClass](t, objs["StorageClass/local-path"])
	if class.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || class.Provisioner != "rancher.io/local-path" ||
		class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Errorf("the local-path StorageClass is not the default, WaitForFirstConsumer class of its provisioner: %+v", class)
	}
	provisioner := convert[appsv1.Deployment](t, objs["Deployment/gpustack-storage/gpustack-local-path-provisioner"]).Spec.Template.Spec
	if c := provisioner.Containers[0]; !contains(c.Command, "--helper-image=example.com/sh:1") || !contains(c.Command, "--provisioner-name="+class.Provisioner) {
		t.Errorf("the provisioner does not run the class's provisioner name and the helper image: %v", c.Command)
	}
	if ns := objs["Namespace/gpustack-storage"]; ns == nil || ns.GetLabels()["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Error("the provisioner's namespace does not admit its helper Pods, which mount the node's volume directory")
	}

	workerArgs := func(objs map[string]*unstructured.Unstructured) []string {
		return convert[appsv1.Deployment](t, objs["Deployment/gpustack-operator-worker"]).Spec.Template.Spec.Containers[0].Args
	}
	if args := workerArgs(render(t)); strings.Contains(strings.Join(args, " "), "--enforcer-image") {
		t.Errorf("the worker copies enforcers by default, from no image the administrator named: %v", args)
	}
	if args := workerArgs(render(t, "worker.deviceManager.enforcers.image=example.com/hami:2")); !contains(args, "--enforcer-image=example.com/hami:2") {
		t.Errorf("the worker does not hand the agents the enforcer image the values name: %v", args)
	}

	objs = render(t, "worker.metrics.serviceMonitor.enabled=true")
	for _, name := range []string{"ServiceMonitor/gpustack-operator-worker", "PodMonitor/gpustack-operator-device-manager"} {
		if objs[name] == nil {
			t.Errorf("with the ServiceMonitor option, %s is not rendered", name)
		}
	}
	if objs := render(t); objs["ServiceMonitor/gpustack-operator-worker"] != nil || objs["PodMonitor/gpustack-operator-device-manager"] != nil {
		t.Error("the prometheus-operator monitors are rendered by default; they need its CRDs")
	}

	objs = render(t, "worker.certmanager.enabled=true")
	for _, name := range []string{"Issuer/gpustack-operator-selfsigned", "Certificate/gpustack-operator-webhook-ca", "Issuer/gpustack-operator-ca", "Certificate/gpustack-operator-webhook"} {
		if objs[name] == nil {
			t.Errorf("with cert-manager, %s is not rendered", name)
		}
	}
	args := convert[appsv1.Deployment](t, objs["Deployment/gpustack-operator-worker"]).Spec.Template.Spec.Containers[0].Args
	if !contains(args, "--webhook-cert-manager") {
		t.Errorf("with cert-manager the worker waits for the issued Secret: %v", args)
	}
	if objs := render(t, "worker.certmanager.enabled=auto"); objs["Certificate/gpustack-operator-webhook"] != nil {
		t.Error("auto issues with cert-manager although its API is not there")
	}

	objs = render(t, "worker.webhook.url=https://127.0.0.1:9443", "worker.deviceManager.enabled=false")
	args = convert[appsv1.Deployment](t, objs["Deployment/gpustack-operator-worker"]).Spec.Template.Spec.Containers[0].Args
	if !contains(args, "--webhook-url=https://127.0.0.1:9443") || contains(args, "--webhook-service=gpustack-operator-worker-webhook") {
		t.Errorf("a webhook URL replaces the Service: %v", args)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--device-manager-image") {
			t.Errorf("device managers are deployed although turned off: %v", args)
		}
	}

	if objs := render(t); objs["Deployment/gpustack-operator-worker-gateway"] != nil || objs["ClusterRole/gpustack-operator-worker-gateway-member"] != nil {
		t.Error("the worker-gateway is rendered by default")
	}
	objs = render(t, "workerGateway.enabled=true", "workerGateway.memberRole=true")
	gw := convert[appsv1.Deployment](t, objs["Deployment/gpustack-operator-worker-gateway"]).Spec.Template.Spec
	checkRestricted(t, gw)
	checkMemoryLimitPassed(t, gw.Containers[0])
	if args := gw.Containers[0].Args; len(args) == 0 || args[0] != "worker-gateway" || !contains(args, "--secure-port=8443") || !contains(args, "--dispatch=true") {
		t.Errorf("the gateway's Deployment does not serve the aggregation layer and dispatch: %v", args)
	}
	// Ready only once its members were read: a replica that served before would answer their types as none.
	if p := gw.Containers[0].ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != "health" ||
		!contains(gw.Containers[0].Args, "--health-probe-bind-address=:8081") {
		t.Errorf("the gateway's readiness is not its /readyz on the health port: %+v, args %v", gw.Containers[0].ReadinessProbe, gw.Containers[0].Args)
	}
	if !contains(gw.Containers[0].Args, "--max-watches-per-client=100") {
		t.Errorf("the gateway's args lack the watch bound: %v", gw.Containers[0].Args)
	}
	if !contains(gw.Containers[0].Args, "--first-answer-grace=2m") {
		t.Errorf("the gateway does not wait the default 2m for the members' first answers: %v", gw.Containers[0].Args)
	}
	memberRole, err := rbac.GatewayMember()
	if err != nil {
		t.Fatal(err)
	}
	noDispatch := render(t, "workerGateway.enabled=true", "workerGateway.dispatch=false")
	if !contains(convert[appsv1.Deployment](t, noDispatch["Deployment/gpustack-operator-worker-gateway"]).Spec.Template.Spec.Containers[0].Args, "--dispatch=false") {
		t.Error("with dispatch off, the gateway still dispatches")
	}
	if diff := cmp.Diff(generatedRules(t, "worker-gateway", "Role", "gpustack-system"),
		convert[rbacv1.ClusterRole](t, noDispatch["Role/gpustack-system/gpustack-operator-worker-gateway"]).Rules); diff != "" {
		t.Errorf("with dispatch off, the gateway's Role in the release's namespace (its certificate and Lease alone, not Kueue's Secrets): -want, +got:\n%s", diff)
	}
	// The member Secrets have a namespace of their own, which an uninstall keeps; the gateway reads Secrets
	// there and nowhere else.
	members := gatewayv1.MembersNamespace
	if ns := objs["Namespace/"+members]; ns == nil || ns.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Errorf("with the worker-gateway, the members' namespace %s is not rendered, or not kept on uninstall", members)
	}
	if !contains(gw.Containers[0].Args, "--members-namespace="+members) {
		t.Errorf("the gateway does not read the member Secrets in %s: %v", members, gw.Containers[0].Args)
	}
	inRelease := render(t, "workerGateway.enabled=true", "workerGateway.membersNamespace="+namespace)
	if inRelease["Namespace/"+namespace] != nil {
		t.Errorf("with the member Secrets in the release's namespace, the chart renders that namespace")
	}
	if diff := cmp.Diff(slices.Concat(generatedRules(t, "worker-gateway", "Role", members), generatedRules(t, "worker-gateway", "Role", "gpustack-system"),
		generatedRules(t, "worker-gateway", "Role", "kueue-system")),
		convert[rbacv1.ClusterRole](t, inRelease["Role/gpustack-system/gpustack-operator-worker-gateway"]).Rules); diff != "" {
		t.Errorf("with the member Secrets in the release's namespace, the gateway's Role there: -want, +got:\n%s", diff)
	}
	// The markers grant the gateway rights in kueue-system; they land where Kueue runs: with the chart's Kueue,
	// this release's namespace (one Role, both sets of rules), otherwise kueueNamespace.
	if !contains(gw.Containers[0].Args, "--kueue-namespace="+namespace) {
		t.Errorf("the gateway copies the kubeconfigs where the chart's Kueue runs, %s: %v", namespace, gw.Containers[0].Args)
	}
	existing := render(t, "workerGateway.enabled=true", "kueue.enabled=false")
	if args := convert[appsv1.Deployment](t, existing["Deployment/gpustack-operator-worker-gateway"]).Spec.Template.Spec.Containers[0].Args; !contains(args, "--kueue-namespace=kueue-system") {
		t.Errorf("with an existing Kueue the gateway copies the kubeconfigs into kueueNamespace: %v", args)
	}
	for key, want := range map[string][]rbacv1.PolicyRule{
		"ClusterRole/gpustack-operator-worker-gateway": generatedRules(t, "worker-gateway", "ClusterRole", ""),
		"Role/gpustack-system/gpustack-operator-worker-gateway": slices.Concat(generatedRules(t, "worker-gateway", "Role", "gpustack-system"),
			generatedRules(t, "worker-gateway", "Role", "kueue-system")),
		"Role/gpustack-members/gpustack-operator-worker-gateway": generatedRules(t, "worker-gateway", "Role", "gpustack-members"),
		"Role/kube-system/gpustack-operator-worker-gateway":      generatedRules(t, "worker-gateway", "Role", "kube-system"),
		"ClusterRole/gpustack-operator-worker-gateway-member":    memberRole.Rules,
	} {
		if objs[key] == nil {
			t.Errorf("with the worker-gateway, %s is not rendered", key)
			continue
		}
		if diff := cmp.Diff(want, convert[rbacv1.ClusterRole](t, objs[key]).Rules); diff != "" {
			t.Errorf("%s rules: -want, +got:\n%s", key, diff)
		}
	}

	if diff := cmp.Diff(generatedRules(t, "worker-gateway", "Role", "kueue-system"),
		convert[rbacv1.ClusterRole](t, existing["Role/kueue-system/gpustack-operator-worker-gateway"]).Rules); diff != "" {
		t.Errorf("with an existing Kueue, the gateway's Role in kueueNamespace: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(generatedRules(t, "worker-gateway", "Role", "gpustack-system"),
		convert[rbacv1.ClusterRole](t, existing["Role/gpustack-system/gpustack-operator-worker-gateway"]).Rules); diff != "" {
		t.Errorf("with an existing Kueue, the gateway's Role in the release's namespace: -want, +got:\n%s", diff)
	}
	checkGatewayHA(t, objs, render(t, "workerGateway.enabled=true", "worker.certmanager.enabled=true"))

	out, err := helm(t, nil, "template", release, chart, "--namespace", "elsewhere", "--kube-version", "1.36.3")
	if err == nil || !strings.Contains(out, "install gpustack-operator into the namespace gpustack-system") {
		t.Errorf("another namespace: want a refusal naming gpustack-system, got %v\n%s", err, out)
	}
}

// unstructuredJob is the part of a Job the test reads, with its annotations.
type unstructuredJob struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Template struct {
			Spec corev1.PodSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// checkRestricted checks what the restricted Pod Security profile asks of a Pod; the install test then has
// the API server enforce it.
func checkRestricted(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("the Pod must run as non-root with the RuntimeDefault seccomp profile: %+v", sc)
	}
	for _, c := range pod.Containers {
		csc := c.SecurityContext
		if csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation || csc.Capabilities == nil ||
			!cmp.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
			t.Errorf("container %s must drop every capability, refuse privilege escalation and keep its root read-only: %+v", c.Name, csc)
		}
	}
}

// generatedRules reads the rules of one role of a component from package/rbac: its ClusterRole, or its Role
// in namespace.
func generatedRules(t *testing.T, component, kind, namespace string) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(testenv.Path("package", "rbac", component, "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		role := &rbacv1.Role{}
		if err := yaml.Unmarshal([]byte(doc), role); err == nil && role.Kind == kind && role.Namespace == namespace {
			return role.Rules
		}
	}
	t.Fatalf("no %s in namespace %q in package/rbac/%s", kind, namespace, component)
	return nil
}

func countKind(objs map[string]*unstructured.Unstructured, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestArgoCDApplication reads the Argo CD Application that installs the operator: it points at this chart and
// at gpustack-system, creates the namespace, and the chart renders with the Application's values as Argo CD
// would render it.
func TestArgoCDApplication(t *testing.T) {
	data, err := os.ReadFile(testenv.Path("examples", "gitops", "operator-application.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var app struct {
		Spec struct {
			Source struct {
				Path string `json:"path"`
				Helm struct {
					ReleaseName  string         `json:"releaseName"`
					ValuesObject map[string]any `json:"valuesObject"`
				} `json:"helm"`
			} `json:"source"`
			Destination struct {
				Namespace string `json:"namespace"`
			} `json:"destination"`
			SyncPolicy struct {
				SyncOptions []string `json:"syncOptions"`
			} `json:"syncPolicy"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &app); err != nil {
		t.Fatal(err)
	}
	src := app.Spec.Source
	if testenv.Path(src.Path) != chart || app.Spec.Destination.Namespace != namespace || !contains(app.Spec.SyncPolicy.SyncOptions, "CreateNamespace=true") {
		t.Errorf("the Application installs %s into %s with %v; want the chart into %s, creating it", src.Path,
			app.Spec.Destination.Namespace, app.Spec.SyncPolicy.SyncOptions, namespace)
	}
	values, err := yaml.Marshal(src.Helm.ValuesObject)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, values, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := helm(t, nil, "template", src.Helm.ReleaseName, chart, "--namespace", app.Spec.Destination.Namespace,
		"--kube-version", "1.36.3", "--values", file)
	if err != nil || !strings.Contains(out, "name: gpustack-operator-worker") {
		t.Errorf("the chart does not render with the Application's values: %v\n%s", err, out)
	}
}

// checkGatewayHA checks that the gateway runs two replicas on separate nodes where it can, kept through a drain,
// behind the chart's APIService (which helm uninstall removes), and shares a certificate cert-manager issues
// where it issues the webhooks'.
func checkGatewayHA(t *testing.T, objs, certManager map[string]*unstructured.Unstructured) {
	t.Helper()
	d := convert[appsv1.Deployment](t, objs["Deployment/gpustack-operator-worker-gateway"])
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Affinity == nil || d.Spec.Template.Spec.Affinity.PodAntiAffinity == nil {
		t.Errorf("the gateway does not run two replicas that prefer separate nodes: replicas %v, affinity %+v", d.Spec.Replicas, d.Spec.Template.Spec.Affinity)
	}
	pdb := convert[policyv1.PodDisruptionBudget](t, objs["PodDisruptionBudget/gpustack-operator-worker-gateway"])
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 ||
		!cmp.Equal(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("the gateway's PodDisruptionBudget does not keep one of its replicas: %+v", pdb.Spec)
	}
	api, cert := objs["APIService/"+gatewayv1.APIServiceName], certManager["Certificate/gpustack-operator-worker-gateway"]
	if api == nil || cert == nil {
		t.Fatalf("the gateway's APIService (%v) or, with cert-manager, its Certificate (%v) is not rendered", api != nil, cert != nil)
	}
	if svc, _, _ := unstructured.NestedString(api.Object, "spec", "service", "name"); svc != "gpustack-operator-worker-gateway" {
		t.Errorf("the chart's APIService %s does not send kube-apiserver to the gateway's Service: %v", gatewayv1.APIServiceName, api.Object["spec"])
	}
	if objs["Certificate/gpustack-operator-worker-gateway"] != nil || contains(d.Spec.Template.Spec.Containers[0].Args, "--cert-manager") {
		t.Error("without cert-manager the chart renders the gateway a Certificate")
	}
	args := convert[appsv1.Deployment](t, certManager["Deployment/gpustack-operator-worker-gateway"]).Spec.Template.Spec.Containers[0].Args
	if secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName"); secret != gatewayv1.ServingSecretName || !contains(args, "--cert-manager") {
		t.Errorf("with cert-manager, the gateway's certificate is not issued into %s and read from there: %v, %v", gatewayv1.ServingSecretName, cert.Object["spec"], args)
	}
}

// TestDeviceClasses renders one DeviceClass per vendor, whose selectors take exactly the whole cards that
// vendor's DRA driver publishes (judged by DRA's own CEL compiler on the devices dra.Device makes): not a card
// in a partitioning mode, not another vendor's. deviceClasses=false renders none, and publish=false tells the
// worker, whose agents inherit it.
func TestDeviceClasses(t *testing.T) {
	objs := render(t)
	for _, v := range vendors.All() {
		u := objs["DeviceClass/gpustack-"+v.Key]
		if u == nil {
			t.Errorf("no DeviceClass gpustack-%s", v.Key)
			continue
		}
		class := convert[resourceapi.DeviceClass](t, u)
		card := providers.Device{Manufacturer: v.Key, Product: "Card", UUID: "card-uuid", MemoryMiB: 16384}
		partitioned := card
		partitioned.Partitions = []providers.Partition{{Name: "3g.40gb", Count: 2}}
		other := providers.Device{Manufacturer: "nvidia", Product: "Card", UUID: "other"}
		if v.Key == "nvidia" {
			other.Manufacturer = "amd"
		}
		want := map[string]bool{"its whole card": true, "its partitioned card": false, "another vendor's card": false}
		got := map[string]bool{}
		for name, c := range map[string]providers.Device{"its whole card": card, "its partitioned card": partitioned, "another vendor's card": other} {
			d := dra.Device(c)
			got[name] = true
			for _, s := range class.Spec.Selectors {
				compiled := draCEL.GetCompiler(draCEL.Features{}).CompileCELExpression(s.CEL.Expression, draCEL.Options{})
				if compiled.Error != nil {
					t.Fatalf("DeviceClass gpustack-%s: %v", v.Key, compiled.Error)
				}
				match, _, err := compiled.DeviceMatches(context.Background(), draCEL.Device{Driver: dra.DriverName(c.Manufacturer),
					Attributes: d.Attributes, Capacity: d.Capacity})
				if err != nil {
					t.Fatalf("DeviceClass gpustack-%s on %s: %v", v.Key, name, err)
				}
				got[name] = got[name] && match
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("DeviceClass gpustack-%s selects: -want, +got:\n%s", v.Key, diff)
		}
	}
	for key := range render(t, "dra.deviceClasses=false") {
		if strings.HasPrefix(key, "DeviceClass/") {
			t.Errorf("dra.deviceClasses=false still renders %s", key)
		}
	}
	for set, want := range map[string][]corev1.EnvVar{"dra.publish=true": nil, "dra.publish=false": {{Name: dra.EnvPublish, Value: "false"}}} {
		d := convert[appsv1.Deployment](t, render(t, set)["Deployment/gpustack-operator-worker"])
		var got []corev1.EnvVar
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == dra.EnvPublish {
				got = append(got, e)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the worker's %s: -want, +got:\n%s", set, dra.EnvPublish, diff)
		}
	}
}
