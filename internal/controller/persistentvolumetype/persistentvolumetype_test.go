package persistentvolumetype_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/persistentvolumetype"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestPersistentVolumeType(t *testing.T) {
	testenv.RunSuite(t, "persistentvolumetype controller suite", &suite)
}

func TestSpec(t *testing.T) {
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	retain := corev1.PersistentVolumeReclaimRetain
	cases := map[string]struct {
		reason string
		class  storagev1.StorageClass
		want   workerv1.InstancePersistentVolumeTypeSpec
	}{
		"Defaults": {
			reason: "A class that leaves binding and reclaim unset gets the API server's defaults: Immediate, Delete.",
			class:  storagev1.StorageClass{Provisioner: "nfs.csi.k8s.io"},
			want:   workerv1.InstancePersistentVolumeTypeSpec{Provisioner: "nfs.csi.k8s.io", BindingMode: "Immediate", ReclaimPolicy: "Delete"},
		},
		"LocalPathDefault": {
			reason: "The chart's local-path class: the cluster's default, bound where the Pod lands.",
			class: storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
				Provisioner: "rancher.io/local-path", VolumeBindingMode: &wait},
			want: workerv1.InstancePersistentVolumeTypeSpec{Provisioner: "rancher.io/local-path", Default: true, BindingMode: "WaitForFirstConsumer", ReclaimPolicy: "Delete"},
		},
		"BetaDefaultExpandableRetain": {
			reason: "The beta default annotation still counts; expansion and Retain are carried over.",
			class: storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"storageclass.beta.kubernetes.io/is-default-class": "true"}},
				Provisioner: "ebs.csi.aws.com", AllowVolumeExpansion: ptr.To(true), ReclaimPolicy: &retain},
			want: workerv1.InstancePersistentVolumeTypeSpec{Provisioner: "ebs.csi.aws.com", Default: true, BindingMode: "Immediate", Expandable: true, ReclaimPolicy: "Retain"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, persistentvolumetype.Spec(&tc.class)); diff != "" {
				t.Errorf("%s\nSpec(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

var _ = It("projects a StorageClass into a type of its name that it owns, and follows the class's changes", func() {
	ctx := context.Background()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "ebs.csi.aws.com"}
	suite.Create(sc)
	c, writes := testenv.CountWrites(suite.Client)
	r := &persistentvolumetype.Reconciler{Client: c}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(sc)}
	_, err := r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	typ := &workerv1.InstancePersistentVolumeType{}
	Expect(suite.Client.Get(ctx, req.NamespacedName, typ)).To(Succeed())
	DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), typ) })
	Expect(metav1.IsControlledBy(typ, sc)).To(BeTrue(), "the class owns its type, so the type goes with it")
	Expect(typ.Spec).To(Equal(workerv1.InstancePersistentVolumeTypeSpec{Provisioner: "ebs.csi.aws.com", BindingMode: "Immediate", ReclaimPolicy: "Delete"}))
	writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })

	sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	Expect(suite.Client.Update(ctx, sc)).To(Succeed())
	_, err = r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(suite.Client.Get(ctx, req.NamespacedName, typ)).To(Succeed())
	Expect(typ.Spec.Default).To(BeTrue(), "the class made the default: its type says so")
})
