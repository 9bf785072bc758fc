// Package credential backs each InstanceSSHPublicKey and InstanceImagePullSecret with a Secret of the same
// name, owned by it, which the Instances that name it mount; its Ready condition says whether the Secret is
// there.
//
// The worker may create Secrets in the users' namespaces but read none there, so it asks by creating: a
// Secret of the name already there is used as it is, and the condition says so. The kinds are immutable, so
// a Secret once made never needs rewriting, and a Ready object is not looked at again: a Secret deleted behind
// its back is not made again (re-create the object).
package credential

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
)

// Reconciler backs the objects of one kind with their Secrets.
type Reconciler struct {
	Client client.Client

	name      string
	newObject func() client.Object
	secretOf  func(client.Object) (*corev1.Secret, error)
	status    func(client.Object) *workerv1.CredentialStatus
}

// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancesshpublickeys;instanceimagepullsecrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancesshpublickeys/status;instanceimagepullsecrets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create

// SSHPublicKeys returns the reconciler of InstanceSSHPublicKeys.
func SSHPublicKeys(c client.Client) *Reconciler {
	return &Reconciler{Client: c, name: "instancesshpublickey",
		newObject: func() client.Object { return &workerv1.InstanceSSHPublicKey{} },
		secretOf: func(o client.Object) (*corev1.Secret, error) {
			return instancepod.AuthorizedKeysSecret(o.(*workerv1.InstanceSSHPublicKey))
		},
		status: func(o client.Object) *workerv1.CredentialStatus { return &o.(*workerv1.InstanceSSHPublicKey).Status },
	}
}

// ImagePullSecrets returns the reconciler of InstanceImagePullSecrets.
func ImagePullSecrets(c client.Client) *Reconciler {
	return &Reconciler{Client: c, name: "instanceimagepullsecret",
		newObject: func() client.Object { return &workerv1.InstanceImagePullSecret{} },
		secretOf: func(o client.Object) (*corev1.Secret, error) {
			return instancepod.PullSecret(o.(*workerv1.InstanceImagePullSecret))
		},
		status: func(o client.Object) *workerv1.CredentialStatus { return &o.(*workerv1.InstanceImagePullSecret).Status },
	}
}

// Reconcile creates the object's Secret unless it is there, and writes the Ready condition when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.newObject()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, nil
	}
	st := r.status(obj)
	before := st.DeepCopy()
	cond, err := r.ensureSecret(ctx, obj, meta.FindStatusCondition(st.Conditions, workerv1.ConditionReady))
	if err != nil {
		return reconcile.Result{}, err
	}
	st.Secret = ""
	if cond.Status == metav1.ConditionTrue {
		st.Secret = obj.GetName()
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if equality.Semantic.DeepEqual(before, st) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, errors.Wrapf(r.Client.Status().Update(ctx, obj), "cannot update the status of %s %s", r.name, req)
}

// ensureSecret creates the Secret and returns the Ready condition that follows; was is the condition before.
// An object already Ready is left alone: its spec cannot change, so its Secret has nothing new to take.
func (r *Reconciler) ensureSecret(ctx context.Context, obj client.Object, was *metav1.Condition) (metav1.Condition, error) {
	gen := obj.GetGeneration()
	if was != nil && was.Status == metav1.ConditionTrue && was.ObservedGeneration == gen {
		return *was, nil
	}
	secret, err := r.secretOf(obj)
	if err != nil {
		return workerv1.ReadyCondition(false, workerv1.ReasonInvalidSpec, err.Error(), gen), nil
	}
	if err := controllerutil.SetControllerReference(obj, secret, r.Client.Scheme()); err != nil {
		return metav1.Condition{}, errors.Wrap(err, "cannot own the Secret")
	}
	err = r.Client.Create(ctx, secret)
	switch {
	case err == nil:
		return workerv1.ReadyCondition(true, workerv1.ReasonSecretCreated, fmt.Sprintf("Secret %s was made from the spec", secret.Name), gen), nil
	case !apierrors.IsAlreadyExists(err):
		return metav1.Condition{}, errors.Wrapf(err, "cannot create Secret %s/%s", secret.Namespace, secret.Name)
	}
	return workerv1.ReadyCondition(true, workerv1.ReasonSecretFound, fmt.Sprintf(
		"a Secret named %s was already in namespace %s: Instances use it as it is, and this spec is not written into it; to have it made from the spec, delete the Secret and re-create this object",
		secret.Name, secret.Namespace), gen), nil
}

// SetupWithManager registers the reconciler, woken by the objects of its kind. It does not watch Secrets: the
// worker may not list them in the users' namespaces.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named(r.name).For(r.newObject()).Complete(r)
}
