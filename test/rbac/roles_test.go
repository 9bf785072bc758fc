// Package rbac_test asks the real API server's authorizer and admission what the operator's generated roles and
// the device managers' node-scope policy (package/rbac) let each component do.
package rbac_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"os"
	"sort"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
	"github.com/gpustack/gpustack-operator/package/rbac"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/vendors"
)

var suite testenv.EnvtestSuite

func TestRoles(t *testing.T) { testenv.RunSuite(t, "generated roles suite", &suite) }

// access is one request a component's service account makes, as the API server's authorizer sees it.
type access struct {
	verb, group, resource, subresource, namespace, name string
}

func (a access) String() string {
	s := a.verb + " " + a.resource
	if a.subresource != "" {
		s += "/" + a.subresource
	}
	if a.group != "" {
		s += "." + a.group
	}
	if a.namespace != "" {
		s += " in " + a.namespace
	}
	if a.name != "" {
		s += " named " + a.name
	}
	return s
}

// can asks the API server whether a component's service account may make the request.
func can(ctx context.Context, component, namespace string, a access) bool {
	GinkgoHelper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + namespace + ":" + rbac.ServiceAccountName(component),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource,
			Subresource: a.subresource, Namespace: a.namespace, Name: a.name},
	}}
	Expect(suite.Client.Create(ctx, sar)).To(Succeed())
	return sar.Status.Allowed
}

// crdNames are the operator's CRDs, read from package/crds (group_plural.yaml is plural.group).
func crdNames() []string {
	GinkgoHelper()
	entries, err := os.ReadDir(testenv.Path("package", "crds"))
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range entries {
		group, plural, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".yaml"), "_")
		Expect(ok).To(BeTrue(), "unexpected CRD file %s", e.Name())
		names = append(names, plural+"."+group)
	}
	sort.Strings(names)
	return names
}

// The roles generated from the code's RBAC markers, bound as the chart binds them, asked of the real API
// server's authorizer: what each component (the worker, the worker-gateway, the agents, the CPU reporters, the
// cleanup) must be refused (anything that would let it grant itself more,
// reach other namespaces' secrets or system workloads, or act as someone else), and what it needs.
var _ = Describe("the generated roles", Ordered, func() {
	system := workerv1.SystemNamespace
	BeforeAll(func() {
		ctx := context.Background()
		for _, ns := range []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: workerv1.DeviceManagerNamespace, Labels: devicemanager.NamespaceLabels}},
			{ObjectMeta: metav1.ObjectMeta{Name: system}}, {ObjectMeta: metav1.ObjectMeta{Name: "kueue-system"}},
			{ObjectMeta: metav1.ObjectMeta{Name: gatewayv1.MembersNamespace}}} {
			Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, ns))).To(Succeed())
		}
		for component, namespace := range map[string]string{"worker": system, "worker-gateway": system, "device-manager": workerv1.DeviceManagerNamespace,
			"cpu-info": workerv1.DeviceManagerNamespace, "cleanup": system} {
			objs, err := rbac.For(component, namespace)
			Expect(err).NotTo(HaveOccurred())
			for _, o := range objs {
				// Another spec may have made the agents' account already.
				Expect(client.IgnoreAlreadyExists(suite.Client.Create(ctx, o))).To(Succeed(), "cannot create %T %s", o, o.GetName())
			}
		}
	})

	type row struct {
		component, namespace string
		access               access
	}
	worker := func(a access) row { return row{"worker", system, a} }
	agent := func(a access) row { return row{"device-manager", workerv1.DeviceManagerNamespace, a} }
	reporter := func(a access) row { return row{"cpu-info", workerv1.DeviceManagerNamespace, a} }
	cleanup := func(a access) row { return row{"cleanup", system, a} }
	gateway := func(a access) row { return row{"worker-gateway", system, a} }
	mustDeny := []row{
		worker(access{verb: "list", resource: "configmaps", namespace: "kueue-system"}),
		worker(access{verb: "watch", resource: "configmaps", namespace: "kueue-system", name: "another-config"}),
		reporter(access{verb: "create", group: workerv1.GroupVersion.Group, resource: "devices"}),
		reporter(access{verb: "list", resource: "pods"}),
		reporter(access{verb: "list", group: "nfd.k8s-sigs.io", resource: "nodefeatures", namespace: system}),
		reporter(access{verb: "delete", group: "nfd.k8s-sigs.io", resource: "nodefeatures", namespace: system, name: "node-a-gpustack-cpu-info"}),
		reporter(access{verb: "create", group: "nfd.k8s-sigs.io", resource: "nodefeatures", namespace: "node-feature-discovery"}),
		worker(access{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin"}),
		worker(access{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "gpustack-operator-worker"}),
		worker(access{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"}),
		worker(access{verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: system}),
		worker(access{verb: "patch", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "gpustack-operator-worker"}),
		worker(access{verb: "patch", group: "apps", resource: "daemonsets", namespace: "kube-system", name: "kube-proxy"}),
		worker(access{verb: "patch", group: "apps", resource: "daemonsets", namespace: workerv1.DeviceManagerNamespace, name: "not-an-agent"}),
		worker(access{verb: "patch", resource: "namespaces", name: "default"}),
		worker(access{verb: "get", resource: "secrets", namespace: "kube-system", name: "any"}),
		worker(access{verb: "list", resource: "secrets"}),
		// In its own namespace it reads two Secrets by name: not Helm's release Secrets, not the others.
		worker(access{verb: "list", resource: "secrets", namespace: system}),
		worker(access{verb: "watch", resource: "secrets", namespace: system}),
		worker(access{verb: "get", resource: "secrets", namespace: system, name: "sh.helm.release.v1.gpustack-operator.v1"}),
		worker(access{verb: "update", resource: "secrets", namespace: system, name: "sh.helm.release.v1.gpustack-operator.v1"}),
		worker(access{verb: "get", resource: "secrets", namespace: "team-a", name: "demo-ssh-host-keys"}),
		// The pull Secret of container-registry-auth it makes for an Instance is create-only too.
		worker(access{verb: "get", resource: "secrets", namespace: "team-a", name: "demo-registry-500d1ff3"}),
		worker(access{verb: "update", resource: "secrets", namespace: "team-a", name: "demo-registry-500d1ff3"}),
		worker(access{verb: "impersonate", resource: "users", name: "admin"}),
		worker(access{verb: "impersonate", resource: "serviceaccounts", namespace: "kube-system", name: "default"}),
		worker(access{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: "kube-system", name: "default"}),
		worker(access{verb: "delete", resource: "nodes", name: "node-a"}),
		worker(access{verb: "update", resource: "nodes", name: "node-a"}),
		worker(access{verb: "patch", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: "someone-elses"}),
		// The chart renders the two configurations; the worker writes their CA bundles only.
		worker(access{verb: "create", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"}),
		worker(access{verb: "create", group: "nfd.k8s-sigs.io", resource: "nodefeatures", namespace: "kube-system"}),
		worker(access{verb: "create", group: "certificates.k8s.io", resource: "certificatesigningrequests"}),
		agent(access{verb: "get", resource: "secrets", namespace: system, name: "gpustack-settings"}),
		agent(access{verb: "patch", resource: "nodes", name: "node-a"}),
		agent(access{verb: "create", resource: "pods", namespace: workerv1.DeviceManagerNamespace}),
		agent(access{verb: "update", group: workerv1.GroupVersion.Group, resource: "instances", namespace: "team-a", name: "demo"}),
		agent(access{verb: "update", group: workerv1.GroupVersion.Group, resource: "devices", subresource: "status", name: "node-a"}),
		agent(access{verb: "create", group: "nfd.k8s-sigs.io", resource: "nodefeatures", namespace: "node-feature-discovery"}),
		gateway(access{verb: "create", resource: "pods", namespace: "team-a"}),
		gateway(access{verb: "get", resource: "secrets", namespace: "kube-system", name: "any"}),
		gateway(access{verb: "get", resource: "secrets", namespace: system, name: "gpustack-worker-webhook-tls"}),
		gateway(access{verb: "update", resource: "secrets", namespace: system, name: "gpustack-worker-webhook-tls"}),
		gateway(access{verb: "list", resource: "secrets", namespace: system}),
		gateway(access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: system, name: "gpustack-operator-worker"}),
		gateway(access{verb: "create", group: "apiregistration.k8s.io", resource: "apiservices"}),
		gateway(access{verb: "list", resource: "secrets", namespace: "kueue-system"}),
		gateway(access{verb: "get", resource: "secrets", namespace: "kueue-system", name: "kueue-webhook-server-cert"}),
		gateway(access{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: "kueue-system", name: "kueue-controller-manager"}),
		gateway(access{verb: "impersonate", resource: "users", name: "admin"}),
		gateway(access{verb: "create", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations"}),
		gateway(access{verb: "patch", group: "apiregistration.k8s.io", resource: "apiservices", name: "v1beta1.metrics.k8s.io"}),
		gateway(access{verb: "patch", resource: "nodes", subresource: "status", name: "node-a"}),
		gateway(access{verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", namespace: "kueue-system"}),
		gateway(access{verb: "update", resource: "configmaps", namespace: "kube-system", name: "extension-apiserver-authentication"}),
		cleanup(access{verb: "delete", resource: "namespaces", name: "default"}),
		cleanup(access{verb: "delete", resource: "secrets", namespace: system, name: "gpustack-settings"}),
		cleanup(access{verb: "get", resource: "secrets", namespace: system, name: "gpustack-worker-webhook-tls"}),
		cleanup(access{verb: "delete", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "cluster-admin"}),
		cleanup(access{verb: "delete", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: "someone-elses"}),
		cleanup(access{verb: "delete", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", name: "clusterqueues.kueue.x-k8s.io"}),
		// A user's volume claim: the cleanup orphans it (patch) and never deletes it.
		cleanup(access{verb: "delete", resource: "persistentvolumeclaims", namespace: "default", name: "datasets"}),
	}
	mustAllow := []row{
		worker(access{verb: "patch", resource: "nodes", subresource: "status", name: "node-a"}),
		worker(access{verb: "create", resource: "pods", namespace: "team-a"}),
		worker(access{verb: "get", resource: "secrets", namespace: system, name: "gpustack-settings"}),
		// It reads Kueue's configuration when it changes: a watch by a metadata.name field selector.
		worker(access{verb: "watch", resource: "configmaps", namespace: "kueue-system", name: "kueue-manager-config"}),
		// Its cache lists and watches gpustack-settings by a metadata.name field selector.
		worker(access{verb: "list", resource: "secrets", namespace: system, name: "gpustack-settings"}),
		worker(access{verb: "watch", resource: "secrets", namespace: system, name: "gpustack-settings"}),
		worker(access{verb: "update", resource: "secrets", namespace: system, name: "gpustack-worker-webhook-tls"}),
		worker(access{verb: "create", resource: "secrets", namespace: system}),
		worker(access{verb: "create", group: "apps", resource: "daemonsets", namespace: workerv1.DeviceManagerNamespace}),
		worker(access{verb: "patch", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: webhooks.MutatingName}),
		worker(access{verb: "patch", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: webhooks.ValidatingName}),
		worker(access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: system, name: "gpustack-operator-worker"}),
		worker(access{verb: "patch", group: "kueue.x-k8s.io", resource: "workloads", subresource: "status", namespace: "team-a", name: "w"}),
		worker(access{verb: "create", group: "nfd.k8s-sigs.io", resource: "nodefeatures", namespace: system}),
		worker(access{verb: "create", resource: "namespaces"}),
		worker(access{verb: "create", resource: "secrets", namespace: "team-a"}),
		worker(access{verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews"}),
		agent(access{verb: "create", group: workerv1.GroupVersion.Group, resource: "devices"}),
		agent(access{verb: "update", group: "nfd.k8s-sigs.io", resource: "nodefeatures", namespace: system, name: "node-a-gpustack-device"}),
		agent(access{verb: "list", resource: "pods"}),
		reporter(access{verb: "create", group: "nfd.k8s-sigs.io", resource: "nodefeatures", namespace: system}),
		reporter(access{verb: "update", group: "nfd.k8s-sigs.io", resource: "nodefeatures", namespace: system, name: "node-a-gpustack-cpu-info"}),
		// It finds the members by listing their namespace, and writes its copies of their kubeconfigs where
		// Kueue reads them, without reading anything there.
		gateway(access{verb: "list", resource: "secrets", namespace: gatewayv1.MembersNamespace}),
		gateway(access{verb: "watch", resource: "secrets", namespace: gatewayv1.MembersNamespace}),
		gateway(access{verb: "create", resource: "secrets", namespace: "kueue-system"}),
		gateway(access{verb: "patch", resource: "secrets", namespace: "kueue-system", name: "gpustack-member-member-a"}),
		gateway(access{verb: "delete", resource: "secrets", namespace: "kueue-system", name: "gpustack-member-member-a"}),
		gateway(access{verb: "patch", group: "apiregistration.k8s.io", resource: "apiservices", name: "v1.gateway.gpustack.ai"}),
		gateway(access{verb: "create", group: "kueue.x-k8s.io", resource: "multikueueclusters"}),
		gateway(access{verb: "get", resource: "configmaps", namespace: "kube-system", name: "extension-apiserver-authentication"}),
		// Its replicas share one serving certificate, which the first signs, and elect the one that dispatches.
		gateway(access{verb: "create", resource: "secrets", namespace: system}),
		gateway(access{verb: "update", resource: "secrets", namespace: system, name: gatewayv1.ServingSecretName}),
		// Each replica follows that Secret by name, to serve a pair another replica made at once.
		gateway(access{verb: "watch", resource: "secrets", namespace: system, name: gatewayv1.ServingSecretName}),
		gateway(access{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: system, name: "gpustack-operator-worker-gateway"}),
		gateway(access{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: system}),
		cleanup(access{verb: "delete", resource: "secrets", namespace: system, name: gatewayv1.ServingSecretName}),
		cleanup(access{verb: "delete", resource: "secrets", namespace: system, name: "gpustack-worker-webhook-tls"}),
		cleanup(access{verb: "delete", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", name: webhooks.MutatingName}),
		cleanup(access{verb: "patch", resource: "nodes", subresource: "status", name: "node-a"}),
	}
	// The names the markers spell out by hand must be every name the code uses.
	for _, v := range vendors.All() {
		mustAllow = append(mustAllow, worker(access{verb: "patch", group: "apps", resource: "daemonsets", namespace: workerv1.DeviceManagerNamespace,
			name: devicemanager.DaemonSetName(v.Key)}))
	}
	mustAllow = append(mustAllow, worker(access{verb: "patch", group: "apps", resource: "daemonsets", namespace: workerv1.DeviceManagerNamespace,
		name: devicemanager.DaemonSetName(devicemanager.RDMAAgent)}))
	mustAllow = append(mustAllow, worker(access{verb: "patch", group: "apps", resource: "daemonsets", namespace: workerv1.DeviceManagerNamespace,
		name: devicemanager.CPUInfoDaemonSetName}))

	// A stored Setting holds its value in plain text, the registry credential's too: it is read as a Secret is.
	storedCredential := access{verb: "get", group: workerv1.GroupVersion.Group, resource: "settings", namespace: system,
		name: workerv1.SettingContainerRegistryAuth}
	// Every component is refused each of these, but where its work needs the verb: then RBAC grants it and
	// the chart's component bounds (bounds_test.go) refuse what leaves the product's work, or the exception
	// says why it stays.
	everyone := []access{
		{verb: "create", resource: "pods", namespace: "kube-system"},
		{verb: "create", resource: "pods", namespace: "team-a"},
		{verb: "patch", resource: "pods", namespace: "team-a", name: "training"},
		{verb: "create", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations"},
		{verb: "create", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"},
		{verb: "get", resource: "secrets", namespace: system, name: "gpustack-worker-webhook-tls"},
		{verb: "get", resource: "secrets", namespace: system, name: "gpustack-settings"},
		{verb: "get", resource: "secrets", namespace: system, name: "sh.helm.release.v1.gpustack-operator.v1"},
		storedCredential,
		{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: system, name: "gpustack-operator-worker"},
		{verb: "patch", resource: "nodes", subresource: "status", name: "node-a"},
	}
	needs := map[string]map[access]string{
		"worker": {
			{verb: "create", resource: "pods", namespace: "kube-system"}:                               "bounds: Instance Pods only, never in kube-system",
			{verb: "create", resource: "pods", namespace: "team-a"}:                                    "bounds: Instance Pods only",
			{verb: "patch", resource: "pods", namespace: "team-a", name: "training"}:                   "the card ledger; bounds: no image or security context",
			{verb: "get", resource: "secrets", namespace: system, name: "gpustack-worker-webhook-tls"}: "it serves the webhooks",
			{verb: "get", resource: "secrets", namespace: system, name: "gpustack-settings"}:           "it reads the settings",
			{verb: "patch", resource: "nodes", subresource: "status", name: "node-a"}:                  "the counting keys; bounds: nothing else",

			storedCredential: "it keeps the settings",
		},
		"worker-gateway": {
			{verb: "patch", resource: "pods", namespace: "team-a", name: "training"}: "the dispatch reasons; bounds: no image or security context",
		},
		"cleanup": {
			{verb: "patch", resource: "pods", namespace: "team-a", name: "training"}:  "finalizers; bounds: no image or security context",
			{verb: "patch", resource: "nodes", subresource: "status", name: "node-a"}: "the counting keys; bounds: nothing else",
		},
	}
	It("refuses every component the accesses no component needs", func(ctx context.Context) {
		for _, component := range []string{"worker", "worker-gateway", "device-manager", "cpu-info", "cleanup"} {
			namespace := system
			if component == "device-manager" || component == "cpu-info" {
				namespace = workerv1.DeviceManagerNamespace
			}
			for _, a := range everyone {
				if why, ok := needs[component][a]; ok {
					Expect(can(ctx, component, namespace, a)).To(BeTrue(), "%s is listed as needing %s (%s), which it may not", component, a, why)
					continue
				}
				Expect(can(ctx, component, namespace, a)).To(BeFalse(), "%s may %s", component, a)
			}
		}
	})

	It("refuses each component what it must not do", func(ctx context.Context) {
		for _, r := range mustDeny {
			Expect(can(ctx, r.component, r.namespace, r.access)).To(BeFalse(), "%s may %s", r.component, r.access)
		}
	})
	It("allows each component what its work needs", func(ctx context.Context) {
		rows := mustAllow
		for _, name := range crdNames() {
			rows = append(rows, cleanup(access{verb: "delete", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", name: name}))
		}
		for _, r := range rows {
			Expect(can(ctx, r.component, r.namespace, r.access)).To(BeTrue(), "%s may not %s", r.component, r.access)
		}
	})
})
