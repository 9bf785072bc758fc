package persistentvolume_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
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
		func(volume *workerv1.InstancePersistentVolume, classes []string, bound bool, w want) {
			for _, name := range classes {
				suite.Create(&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/" + name})
			}
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
		Entry("no class and no mode: the cluster's default class and ReadWriteOnce; an unbound claim is Pending, and says the cluster has no default type",
			makeVolume("defaults", "", ""), nil, false,
			want{Claim: claimSpec(corev1.ReadWriteOnce, nil), Owned: true,
				Status: workerv1.InstancePersistentVolumeStatus{Phase: "Pending",
					Message: "no spec.type, and no InstancePersistentVolumeType is the default: name one (kubectl get instpvtype lists them)"}}),
		Entry("the type names the class and the mode maps to the claim's; a bound claim's volume shows in the status",
			makeVolume("shared", "nfs", workerv1.ReadWriteMany), nil, true,
			want{Claim: claimSpec(corev1.ReadWriteMany, ptr.To("nfs")), Owned: true,
				Status: workerv1.InstancePersistentVolumeStatus{Phase: "Bound", Volume: "pv-shared"}}),
		Entry("a pending claim of a type that exists says nothing",
			makeVolume("waits", "local", ""), []string{"local"}, false,
			want{Claim: claimSpec(corev1.ReadWriteOnce, ptr.To("local")), Owned: true,
				Status: workerv1.InstancePersistentVolumeStatus{Phase: "Pending"}}),
		Entry("a pending claim of a type that does not exist says so",
			makeVolume("typo", "lcoal", ""), []string{"local"}, false,
			want{Claim: claimSpec(corev1.ReadWriteOnce, ptr.To("lcoal")), Owned: true,
				Status: workerv1.InstancePersistentVolumeStatus{Phase: "Pending",
					Message: "spec.type lcoal: no InstancePersistentVolumeType of that name (kubectl get instpvtype lists them)"}}),
	)
})

func TestTypeProblem(t *testing.T) {
	class := func(name string, isDefault bool) storagev1.StorageClass {
		sc := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if isDefault {
			sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		return sc
	}
	cases := map[string]struct {
		reason  string
		volume  *workerv1.InstancePersistentVolume
		classes []storagev1.StorageClass
		want    string
	}{
		"Named": {reason: "A type of a class's name is there.",
			volume: makeVolume("v", "nfs", ""), classes: []storagev1.StorageClass{class("local", true), class("nfs", false)}},
		"Unknown": {reason: "A type that names no class is named back.",
			volume: makeVolume("v", "fast", ""), classes: []storagev1.StorageClass{class("local", true)},
			want: "spec.type fast: no InstancePersistentVolumeType of that name (kubectl get instpvtype lists them)"},
		"DefaultTaken": {reason: "No type takes the default class.",
			volume: makeVolume("v", "", ""), classes: []storagev1.StorageClass{class("nfs", false), class("local", true)}},
		"NoDefault": {reason: "No type where no class is the default can never be provisioned.",
			volume: makeVolume("v", "", ""), classes: []storagev1.StorageClass{class("nfs", false)},
			want: "no spec.type, and no InstancePersistentVolumeType is the default: name one (kubectl get instpvtype lists them)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, persistentvolume.TypeProblem(tc.volume, tc.classes)); diff != "" {
				t.Errorf("%s\nTypeProblem(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
