package instance

import (
	"context"
	"fmt"
	"reflect"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// credential is an object an Instance names whose Secret its Pod uses.
type credential struct {
	kind, name string
	object     client.Object
	status     func() workerv1.CredentialStatus
}

// credentials returns the InstanceSSHPublicKey and InstanceImagePullSecret the Instance names.
func credentials(inst *workerv1.Instance) []credential {
	var out []credential
	if n := inst.Spec.SSHPublicKey; n != "" {
		key := &workerv1.InstanceSSHPublicKey{}
		out = append(out, credential{kind: "InstanceSSHPublicKey", name: n, object: key,
			status: func() workerv1.CredentialStatus { return key.Status }})
	}
	if n := inst.Spec.ImagePullSecret; n != "" {
		pull := &workerv1.InstanceImagePullSecret{}
		out = append(out, credential{kind: "InstanceImagePullSecret", name: n, object: pull,
			status: func() workerv1.CredentialStatus { return pull.Status }})
	}
	return out
}

// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancesshpublickeys;instanceimagepullsecrets,verbs=get;list;watch

// credentialsHold returns why the Instance's SSH key or pull secret keeps its Pod from being made, "" when
// neither does: each must exist and be Ready, its Secret there, or the kubelet would hold the Pod without
// saying why where the user looks.
func (r *Reconciler) credentialsHold(ctx context.Context, inst *workerv1.Instance) (string, error) {
	for _, c := range credentials(inst) {
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: c.name}, c.object); err != nil {
			if meta.IsNoMatchError(err) {
				// The kind's CRD is not installed yet (CRDs older than this binary): the name is a Secret's.
				continue
			}
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("waiting for %s %s: none of that name in namespace %s", c.kind, c.name, inst.Namespace), nil
			}
			return "", errors.Wrapf(err, "cannot get %s %s", c.kind, c.name)
		}
		ready := meta.FindStatusCondition(c.status().Conditions, workerv1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionTrue {
			why := "its Secret is not made yet"
			if ready != nil && ready.Message != "" {
				why = ready.Message
			}
			return fmt.Sprintf("waiting for %s %s: %s", c.kind, c.name, why), nil
		}
	}
	return "", nil
}

// instancesNaming maps an InstanceSSHPublicKey or InstanceImagePullSecret to the Instances of its namespace
// that name it, so that one waiting for it starts as soon as it is Ready.
func (r *Reconciler) instancesNaming() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list workerv1.InstanceList
		if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, i := range list.Items {
			for _, c := range credentials(&i) {
				if c.name == o.GetName() && reflect.TypeOf(c.object) == reflect.TypeOf(o) {
					out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: i.Namespace, Name: i.Name}})
					break
				}
			}
		}
		return out
	})
}

// Served reports whether the API server serves obj's kind: false while its CRD is not installed, as after a
// Helm upgrade that left the CRDs older than this binary.
func Served(mgr ctrl.Manager, obj client.Object) bool {
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return false
	}
	_, err = mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}
