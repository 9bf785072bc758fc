package uninstall

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
	"github.com/gpustack/gpustack-operator/package/rbac"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestUninstall runs the package's Ginkgo suite on a real API server (the integration tier).
func TestUninstall(t *testing.T) { testenv.RunSuite(t, "uninstall cleanup suite", &suite) }

var suite testenv.EnvtestSuite

const capacityManager = "test-node-capacity"

// Fills a real API server with what a worker leaves behind, beside look-alikes that are not the
// operator's, runs the cleanup, and checks that exactly the operator's objects and fields are gone.
var _ = It("fills a real API server with what a worker leaves behind, beside look-alikes that are not the operator's, runs the cleanup, and checks that exactly the operator's objects and fields are gone", func() {
	ctx := context.Background()
	create := func(objs ...client.Object) {
		GinkgoHelper()
		for _, o := range objs {
			if err := suite.Client.Create(ctx, o); err != nil {
				Fail(fmt.Sprintf("cannot create %T %s: %v", o, o.GetName(), err))
			}
		}
	}
	// The suite made gpustack-system.
	mutating, validating := webhooks.Configurations(func(path string) admissionv1.WebhookClientConfig {
		url := "https://127.0.0.1:9443" + path
		return admissionv1.WebhookClientConfig{URL: &url}
	})
	composed := map[string]string{"gpustack.ai/composed-hash": "h"}
	it := builders.MakeInstanceType("gpustack--generic-linux-amd64").Obj()
	it.Spec.OS, it.Spec.Arch, it.Spec.GeneralGroup = "linux", "amd64", "generic"
	it.Finalizers = []string{"gpustack.ai/controlled"}
	// The InstanceType goes in before the webhook configurations, whose server this test does not run.
	create(it)
	gatewaySecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: gatewayv1.ServingSecretName}}
	answersSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: gatewayv1.AnswersSecretName}}
	create(mutating, validating, gatewaySecret, answersSecret,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "gpustack-worker-webhook-tls"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "gpustack-settings"}},
		&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "gpustack--composed", Annotations: composed}},
		&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}},
		// Kueue's finalizer, which nothing removes once Kueue is gone with the release.
		&kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "gpustack-node-devices", Finalizers: []string{kueue.ResourceInUseFinalizerName}},
			Spec: kueue.AdmissionCheckSpec{ControllerName: "gpustack.ai/node-devices"}},
		&nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "node-a-gpustack-worker",
			Labels: map[string]string{"app.kubernetes.io/part-of": "gpustack-operator-worker"}}},
		&nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "node-a-nfd-worker"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	// A user's volume: the claim its InstancePersistentVolume owns, and a claim another controller owns.
	claim := func(name, apiVersion, kind string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: "uid-" + types.UID(name)}}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	}
	usersClaim, othersClaim := claim("datasets", "worker.gpustack.ai/v1", "InstancePersistentVolume"), claim("cache", "example.com/v1", "Cache")
	create(usersClaim, othersClaim)
	// The counting key, applied to Node status by its field manager, beside capacity the kubelet owns.
	node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"nvidia.com/gpu.sliced.units": resource.MustParse("1600000")}}}
	//nolint:staticcheck // client.Apply with a typed object that carries its TypeMeta.
	Expect(suite.Client.Status().Patch(ctx, node, client.Apply, client.FieldOwner(capacityManager))).To(Succeed())
	kubelet := &corev1.Node{TypeMeta: node.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	//nolint:staticcheck // client.Apply with a typed object that carries its TypeMeta.
	Expect(suite.Client.Status().Patch(ctx, kubelet, client.Apply, client.FieldOwner("kubelet"))).To(Succeed())

	// The cleanup runs as the hook's account, with the role generated from its markers, as the chart binds it:
	// a request its role does not allow fails here as it would in the hook.
	roles, err := rbac.For("cleanup", workerv1.SystemNamespace)
	Expect(err).NotTo(HaveOccurred())
	create(roles...)
	hookCfg := rest.CopyConfig(suite.Config)
	hookCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + workerv1.SystemNamespace + ":" + rbac.ServiceAccountName("cleanup"),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + workerv1.SystemNamespace, "system:authenticated"}}
	hook, err := client.New(hookCfg, client.Options{Scheme: suite.Client.Scheme()})
	Expect(err).NotTo(HaveOccurred())

	var log bytes.Buffer
	err = Cleanup(ctx, hook, Options{Namespace: workerv1.SystemNamespace, WebhookSecret: "gpustack-worker-webhook-tls", Timeout: time.Minute,
		Log: &log, ComposedAnnotation: "gpustack.ai/composed-hash", CapacityFieldManager: capacityManager, AdmissionCheck: "gpustack-node-devices"})
	if err != nil {
		Fail(fmt.Sprintf("Cleanup: %v\n%s", err, log.String()))
	}

	gone := func(o client.Object) bool {
		err := suite.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
		// envtest runs no namespace controller: a namespace being deleted counts as gone.
		return apierrors.IsNotFound(err) || err == nil && o.GetDeletionTimestamp() != nil
	}
	ours := []client.Object{mutating, validating, gatewaySecret, answersSecret,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "gpustack-worker-webhook-tls"}},
		&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "gpustack--composed"}},
		&kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: "gpustack-node-devices"}},
		&nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "node-a-gpustack-worker"}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "instancetypes.worker.gpustack.ai"}},
	}
	err = suite.Client.Get(ctx, client.ObjectKey{Name: "gpustack-node-devices"}, &kueue.AdmissionCheck{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the AdmissionCheck, Kueue's finalizer on it, is gone: %v", err)
	for _, o := range ours {
		if !gone(o) {
			Fail(fmt.Sprintf("%T %s is left after the cleanup", o, o.GetName()))
		}
	}
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "gpustack-settings"}},
		&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}},
		&nfdv1alpha1.NodeFeature{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "node-a-nfd-worker"}},
	} {
		if gone(o) {
			Fail(fmt.Sprintf("%T %s is not the operator's, but the cleanup removed it", o, o.GetName()))
		}
	}
	got := &corev1.Node{}
	Expect(suite.Client.Get(ctx, client.ObjectKey{Name: "node-a"}, got)).To(Succeed())
	if _, ok := got.Status.Capacity["nvidia.com/gpu.sliced.units"]; ok {
		Fail("the counting key is left in the Node's status")
	}
	if _, ok := got.Status.Capacity[corev1.ResourceCPU]; !ok {
		Fail("the kubelet's capacity was removed with the counting key")
	}
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(usersClaim), usersClaim)).To(Succeed())
	Expect(usersClaim.OwnerReferences).To(BeEmpty(), "the user's claim is orphaned, so the garbage collector keeps it and its data")
	Expect(log.String()).To(ContainSubstring("kept PersistentVolumeClaim default/datasets"))
	Expect(suite.Client.Get(ctx, client.ObjectKeyFromObject(othersClaim), othersClaim)).To(Succeed())
	Expect(othersClaim.OwnerReferences).To(HaveLen(1), "a claim another controller owns is left as it is")
	if !strings.Contains(log.String(), "the operator's CRDs are gone") {
		Fail(fmt.Sprintf("the cleanup does not say the CRDs are gone:\n%s", log.String()))
	}
})
