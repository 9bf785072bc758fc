// Package persistentvolume backs each InstancePersistentVolume with a PersistentVolumeClaim of the same name
// and reports the claim's phase and volume in its status.
package persistentvolume

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/persistentvolumetype"
)

// accessModes maps the short access modes of the API to the claim's.
var accessModes = map[workerv1.PersistentAccessMode]corev1.PersistentVolumeAccessMode{
	workerv1.ReadWriteOnce: corev1.ReadWriteOnce, workerv1.ReadWriteMany: corev1.ReadWriteMany,
	workerv1.ReadOnlyMany: corev1.ReadOnlyMany, workerv1.ReadWriteOncePod: corev1.ReadWriteOncePod,
}

// Claim returns the claim that backs the volume: its StorageClass (the cluster's default when empty), size and
// access mode (ReadWriteOnce when empty).
func Claim(v *workerv1.InstancePersistentVolume) *corev1.PersistentVolumeClaim {
	mode, ok := accessModes[v.Spec.AccessMode]
	if !ok {
		mode = corev1.ReadWriteOnce
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: v.Name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{mode},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: v.Spec.Capacity}},
		},
	}
	if v.Spec.Type != "" {
		class := v.Spec.Type
		pvc.Spec.StorageClassName = &class
	}
	return pvc
}

// TypeProblem says why a volume's claim cannot be provisioned by its type, among the cluster's StorageClasses
// (each one an InstancePersistentVolumeType of its name): a type that names none, or no type where none is
// the default; "" when the type is there.
func TypeProblem(v *workerv1.InstancePersistentVolume, classes []storagev1.StorageClass) string {
	for i := range classes {
		if v.Spec.Type == classes[i].Name || v.Spec.Type == "" && persistentvolumetype.Spec(&classes[i]).Default {
			return ""
		}
	}
	if v.Spec.Type == "" {
		return "no spec.type, and no InstancePersistentVolumeType is the default: name one (kubectl get instpvtype lists them)"
	}
	return "spec.type " + v.Spec.Type + ": no InstancePersistentVolumeType of that name (kubectl get instpvtype lists them)"
}

// Reconciler keeps one volume's claim and status.
type Reconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancepersistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancepersistentvolumes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch

// Reconcile creates the claim when it is missing and copies its phase and volume to the status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	v := &workerv1.InstancePersistentVolume{}
	if err := r.Client.Get(ctx, req.NamespacedName, v); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, req.NamespacedName, pvc)
	if apierrors.IsNotFound(err) {
		pvc = Claim(v)
		if err := controllerutil.SetControllerReference(v, pvc, r.Client.Scheme()); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot own the claim")
		}
		// The claim's own event brings its phase back here.
		return reconcile.Result{}, errors.Wrap(client.IgnoreAlreadyExists(r.Client.Create(ctx, pvc)), "cannot create the claim")
	}
	if err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot get the claim")
	}
	st := workerv1.InstancePersistentVolumeStatus{Phase: string(pvc.Status.Phase), Volume: pvc.Spec.VolumeName}
	if pvc.Status.Phase == corev1.ClaimPending || pvc.Status.Phase == "" {
		classes := &storagev1.StorageClassList{}
		if err := r.Client.List(ctx, classes); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot list the StorageClasses")
		}
		st.Message = TypeProblem(v, classes.Items)
	}
	if st == v.Status {
		return reconcile.Result{}, nil
	}
	v.Status = st
	return reconcile.Result{}, errors.Wrap(r.Client.Status().Update(ctx, v), "cannot update the volume's status")
}

// SetupWithManager registers the reconciler, woken by volumes, their claims, and StorageClasses (a type that
// appears, or a new default, answers a volume that waited for it).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("persistentvolume").For(&workerv1.InstancePersistentVolume{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Watches(&storagev1.StorageClass{}, handler.EnqueueRequestsFromMapFunc(r.waiting)).Complete(r)
}

// waiting returns the volumes whose status says they wait for a type.
func (r *Reconciler) waiting(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &workerv1.InstancePersistentVolumeList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, v := range list.Items {
		if v.Status.Message != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&v)})
		}
	}
	return reqs
}
