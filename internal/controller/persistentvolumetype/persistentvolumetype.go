// Package persistentvolumetype projects each StorageClass into an InstancePersistentVolumeType of the same
// name, owned by the class so that it goes with it: the types an InstancePersistentVolume's spec.type can name,
// readable by users who may not read StorageClasses.
package persistentvolumetype

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// defaultClassAnnotations mark the cluster's default StorageClass (and its beta spelling, still honoured).
var defaultClassAnnotations = []string{"storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"}

// Spec returns what a StorageClass offers a volume, with the API server's defaults for what the class leaves
// unset (Immediate binding, Delete reclaim).
func Spec(sc *storagev1.StorageClass) workerv1.InstancePersistentVolumeTypeSpec {
	spec := workerv1.InstancePersistentVolumeTypeSpec{Provisioner: sc.Provisioner,
		BindingMode: string(storagev1.VolumeBindingImmediate), ReclaimPolicy: string(corev1.PersistentVolumeReclaimDelete)}
	for _, a := range defaultClassAnnotations {
		spec.Default = spec.Default || sc.Annotations[a] == "true"
	}
	if sc.VolumeBindingMode != nil {
		spec.BindingMode = string(*sc.VolumeBindingMode)
	}
	if sc.ReclaimPolicy != nil {
		spec.ReclaimPolicy = string(*sc.ReclaimPolicy)
	}
	spec.Expandable = sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return spec
}

// Reconciler keeps one class's type.
type Reconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancepersistentvolumetypes,verbs=get;list;watch;create;update

// Reconcile creates the class's type, or updates it when the class changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	sc := &storagev1.StorageClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, sc); err != nil {
		// A class gone takes its type with it: the garbage collector deletes what it owns.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if sc.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	typ := &workerv1.InstancePersistentVolumeType{}
	err := r.Client.Get(ctx, req.NamespacedName, typ)
	if apierrors.IsNotFound(err) {
		typ = &workerv1.InstancePersistentVolumeType{ObjectMeta: metav1.ObjectMeta{Name: sc.Name}, Spec: Spec(sc)}
		if err := controllerutil.SetControllerReference(sc, typ, r.Client.Scheme()); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot own the volume type")
		}
		return reconcile.Result{}, errors.Wrapf(r.Client.Create(ctx, typ), "cannot create InstancePersistentVolumeType %s", sc.Name)
	}
	if err != nil {
		return reconcile.Result{}, errors.Wrapf(err, "cannot get InstancePersistentVolumeType %s", sc.Name)
	}
	want := Spec(sc)
	if equality.Semantic.DeepEqual(typ.Spec, want) {
		return reconcile.Result{}, nil
	}
	typ.Spec = want
	return reconcile.Result{}, errors.Wrapf(r.Client.Update(ctx, typ), "cannot update InstancePersistentVolumeType %s", sc.Name)
}

// SetupWithManager registers the reconciler, woken by StorageClasses and the types they own (a type edited or
// deleted by hand is put back).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("persistentvolumetype").For(&storagev1.StorageClass{}).
		Owns(&workerv1.InstancePersistentVolumeType{}).Complete(r)
}
