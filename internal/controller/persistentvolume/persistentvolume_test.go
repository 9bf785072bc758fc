package persistentvolume_test

import (
	"context"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
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

var suite testenv.ControllerSuite

func TestMain(m *testing.M) { os.Exit(testenv.ControllerMain(m, &suite)) }

func makeVolume(name, class string, mode workerv1.PersistentAccessMode) *workerv1.InstancePersistentVolume {
	return &workerv1.InstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: workerv1.InstancePersistentVolumeSpec{Type: class, Capacity: resource.MustParse("10Gi"), AccessMode: mode}}
}

// TestReconcile reconciles a volume twice, as its claim's events would: the first reconcile creates the claim,
// owned by the volume; the second copies the claim's phase and volume to the status. A third, converged, writes
// nothing.
func TestReconcile(t *testing.T) {
	suite.Skip(t)
	type want struct {
		Claim  corev1.PersistentVolumeClaimSpec
		Owned  bool
		Status workerv1.InstancePersistentVolumeStatus
	}
	cases := map[string]struct {
		reason string
		volume *workerv1.InstancePersistentVolume
		bound  bool
		want   want
	}{
		"Defaults": {
			reason: "No class and no mode: the cluster's default class and ReadWriteOnce; an unbound claim's phase is Pending.",
			volume: makeVolume("defaults", "", ""),
			want: want{Claim: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
				Owned: true, Status: workerv1.InstancePersistentVolumeStatus{Phase: "Pending"}},
		},
		"ClassModeAndBound": {
			reason: "The type names the class, the mode maps to the claim's; a bound claim's volume shows in the status.",
			volume: makeVolume("shared", "nfs", workerv1.ReadWriteMany),
			bound:  true,
			want: want{Claim: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				StorageClassName: ptr.To("nfs"),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
				Owned: true, Status: workerv1.InstancePersistentVolumeStatus{Phase: "Bound", Volume: "pv-shared"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			suite.Create(t, tc.volume)
			c, writes := testenv.CountWrites(suite.Client)
			r := &persistentvolume.Reconciler{Client: c}
			req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.volume)}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			}
			pvc := &corev1.PersistentVolumeClaim{}
			if err := suite.Client.Get(ctx, req.NamespacedName, pvc); err != nil {
				t.Fatalf("%s\nthe claim: %v", tc.reason, err)
			}
			t.Cleanup(func() { _ = suite.Client.Delete(ctx, pvc) })
			// The PersistentVolume controller's part: the claim's phase, and its volume once bound.
			pvc.Status.Phase = corev1.ClaimPending
			if tc.bound {
				pvc.Spec.VolumeName = "pv-" + tc.volume.Name
				if err := suite.Client.Update(ctx, pvc); err != nil {
					t.Fatal(err)
				}
				pvc.Status.Phase = corev1.ClaimBound
			}
			if err := suite.Client.Status().Update(ctx, pvc); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			}
			v := &workerv1.InstancePersistentVolume{}
			if err := suite.Client.Get(ctx, req.NamespacedName, v); err != nil {
				t.Fatal(err)
			}
			spec := pvc.Spec
			spec.VolumeName, spec.VolumeMode = "", nil
			got := want{Claim: spec, Owned: metav1.IsControlledBy(pvc, v), Status: v.Status}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nReconcile(...): -want, +got:\n%s", tc.reason, diff)
			}
			writes.Reset()
			if _, err := r.Reconcile(ctx, req); err != nil {
				t.Fatal(err)
			}
			if w := writes.List(); len(w) > 0 {
				t.Errorf("%s\na converged Reconcile(...) wrote %v, want nothing", tc.reason, w)
			}
		})
	}
}
