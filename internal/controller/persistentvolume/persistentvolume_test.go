package persistentvolume_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/persistentvolume"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestPersistentVolume(t *testing.T) {
	testenv.RunSuite(t, "persistentvolume controller suite", &suite)
}

func makeVolume(name, class string, mode workerv1.PersistentAccessMode) *workerv1.InstancePersistentVolume {
	return &workerv1.InstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: workerv1.InstancePersistentVolumeSpec{Type: class, Capacity: resource.MustParse("10Gi"), AccessMode: mode}}
}

// want is what a spec reads back: the claim's spec, whether the volume owns it, and the volume's status.
type want struct {
	Claim  corev1.PersistentVolumeClaimSpec
	Owned  bool
	Status workerv1.InstancePersistentVolumeStatus
}

func claimSpec(mode corev1.PersistentVolumeAccessMode, class *string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode}, StorageClassName: class,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}
}

var _ = Describe("Reconcile", func() {
	ctx := context.Background()

	// The first reconcile creates the claim; the claim's own event brings the second, which copies its phase and
	// volume; a third, converged, writes nothing.
	DescribeTable("backs the volume with an owned claim and reports the claim in the status",
		func(volume *workerv1.InstancePersistentVolume, bound bool, w want) {
			suite.Create(volume)
			c, writes := testenv.CountWrites(suite.Client)
			r := &persistentvolume.Reconciler{Client: c}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(volume)}
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())

			pvc := &corev1.PersistentVolumeClaim{}
			Expect(suite.Client.Get(ctx, req.NamespacedName, pvc)).To(Succeed(), "the claim")
			DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), pvc) })
			// The PersistentVolume controller's part: the claim's phase, and its volume once bound.
			pvc.Status.Phase = corev1.ClaimPending
			if bound {
				pvc.Spec.VolumeName = "pv-" + volume.Name
				Expect(suite.Client.Update(ctx, pvc)).To(Succeed())
				pvc.Status.Phase = corev1.ClaimBound
			}
			Expect(suite.Client.Status().Update(ctx, pvc)).To(Succeed())
			_, err = r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())

			v := &workerv1.InstancePersistentVolume{}
			Expect(suite.Client.Get(ctx, req.NamespacedName, v)).To(Succeed())
			spec := pvc.Spec
			spec.VolumeName, spec.VolumeMode = "", nil
			got := want{Claim: spec, Owned: metav1.IsControlledBy(pvc, v), Status: v.Status}
			Expect(cmp.Diff(w, got)).To(BeEmpty(), "Reconcile(...): -want, +got")

			writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })
		},
		Entry("no class and no mode: the cluster's default class and ReadWriteOnce; an unbound claim is Pending",
			makeVolume("defaults", "", ""), false,
			want{Claim: claimSpec(corev1.ReadWriteOnce, nil), Owned: true,
				Status: workerv1.InstancePersistentVolumeStatus{Phase: "Pending"}}),
		Entry("the type names the class and the mode maps to the claim's; a bound claim's volume shows in the status",
			makeVolume("shared", "nfs", workerv1.ReadWriteMany), true,
			want{Claim: claimSpec(corev1.ReadWriteMany, ptr.To("nfs")), Owned: true,
				Status: workerv1.InstancePersistentVolumeStatus{Phase: "Bound", Volume: "pv-shared"}}),
	)
})
