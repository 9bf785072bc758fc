package instance

import (
	"context"
	"encoding/json"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/internal/settings"
)

// DispatchedReconciler gives the Pod of an Instance that a manager cluster dispatched here through MultiKueue
// its SSH host-keys Secret, the pull Secret of container-registry-auth it lists, and the Service of its ports.
// MultiKueue copies only the Pod; the Secrets its sidecar mounts and is pulled with, and the Service it is
// reached through, are made here, owned by the Pod so they go with it, and the manager's copies (whose Pod
// never runs) stay unused. The Service carries where the Instance is reached here (workerv1.AnnotationInstanceAccess),
// which the manager's worker-gateway reads and passes on to the manager's Instance.
type DispatchedReconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",resources=services,verbs=get;create;patch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=settings,verbs=get;list;watch

// Reconcile creates the host-keys Secret of a dispatched Instance's Pod, and the registry pull Secret it
// lists, unless they are there.
func (r *DispatchedReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !dispatched(pod) || pod.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	inst := &workerv1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Labels[workerv1.LabelInstance]}}
	secret, err := instancepod.HostKeysSecret(inst)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := controllerutil.SetOwnerReference(pod, secret, r.Client.Scheme()); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot make the Pod own its host-keys Secret")
	}
	// The worker may create Secrets but read none outside its namespace: one already there is kept.
	if err := client.IgnoreAlreadyExists(r.Client.Create(ctx, secret)); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot create the dispatched Instance's host-keys Secret")
	}
	values, _, err := settings.Load(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.ensureRegistryAuth(ctx, inst, pod, values); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.ensureService(ctx, pod, values)
}

// ensureService creates the dispatched Instance's Service, owned by the Pod, unless it is there, and notes on
// it where the Instance is reached here: this cluster's access addresses for the Pod's node (none before the
// Pod has one; its scheduling brings it back here) and the Service's node ports.
func (r *DispatchedReconciler) ensureService(ctx context.Context, pod *corev1.Pod, values settings.Values) error {
	want := instancepod.DispatchedService(pod)
	if want == nil {
		return nil
	}
	svc := &corev1.Service{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), svc)
	if apierrors.IsNotFound(err) {
		if err := controllerutil.SetOwnerReference(pod, want, r.Client.Scheme()); err != nil {
			return errors.Wrap(err, "cannot make the Pod own its Service")
		}
		// Create fills in the node ports the API server gave.
		svc = want
		err = r.Client.Create(ctx, svc)
	}
	if err != nil {
		return errors.Wrap(err, "cannot get or create the dispatched Instance's Service")
	}
	addresses := instancepod.AccessAddresses(instancepod.HostIPs(pod), values[workerv1.SettingInstanceAccessStaticAddress], values[workerv1.SettingInstanceAccessWildcardDNS])
	access, err := json.Marshal(instancepod.ServiceAccess(svc, addresses))
	if err != nil {
		return errors.Wrap(err, "cannot encode the dispatched Instance's access")
	}
	if svc.Annotations[workerv1.AnnotationInstanceAccess] == string(access) {
		return nil
	}
	orig := svc.DeepCopy()
	metav1.SetMetaDataAnnotation(&svc.ObjectMeta, workerv1.AnnotationInstanceAccess, string(access))
	return errors.Wrap(r.Client.Patch(ctx, svc, client.MergeFrom(orig)), "cannot note the dispatched Instance's access on its Service")
}

// ensureRegistryAuth creates the pull Secret of this cluster's container-registry-auth that the dispatched Pod
// lists (instancepod.DispatchedAuthSecret), owned by the Pod, unless it is there. A Pod that lists another
// credential's Secret (the manager's container-registry-auth is not this cluster's) gets none: its sidecar is
// pulled without it.
func (r *DispatchedReconciler) ensureRegistryAuth(ctx context.Context, inst *workerv1.Instance, pod *corev1.Pod, values settings.Values) error {
	secret, err := instancepod.DispatchedAuthSecret(inst, pod, values[workerv1.SettingContainerRegistryAuth])
	if err != nil || secret == nil {
		return err
	}
	if err := controllerutil.SetOwnerReference(pod, secret, r.Client.Scheme()); err != nil {
		return errors.Wrap(err, "cannot make the Pod own its registry pull Secret")
	}
	return errors.Wrap(client.IgnoreAlreadyExists(r.Client.Create(ctx, secret)),
		"cannot create the dispatched Instance's registry pull Secret")
}

// dispatched reports whether the Pod is an Instance's, created here by a manager's MultiKueue.
func dispatched(pod *corev1.Pod) bool {
	_, fromManager := pod.Labels[kueue.MultiKueueOriginLabel]
	return fromManager && pod.Labels[workerv1.LabelInstance] != ""
}

// SetupWithManager registers the reconciler for the Pods MultiKueue created here, and again for every one of
// them when an instance-access Setting changes: the access addresses noted on their Services follow it.
func (r *DispatchedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allDispatched := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		pods := &corev1.PodList{}
		if err := r.Client.List(ctx, pods, client.HasLabels{kueue.MultiKueueOriginLabel, workerv1.LabelInstance}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, len(pods.Items))
		for i, p := range pods.Items {
			reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)}
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).Named("dispatched-instance-pod").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			pod, ok := o.(*corev1.Pod)
			return ok && dispatched(pod)
		}))).
		Watches(&workerv1.Setting{}, allDispatched, builder.WithPredicates(accessSettings)).
		Complete(r)
}

// accessSettings passes the events of the Settings an Instance's access addresses are made of.
var accessSettings = predicate.NewPredicateFuncs(func(o client.Object) bool {
	return o.GetNamespace() == workerv1.SystemNamespace &&
		(o.GetName() == workerv1.SettingInstanceAccessStaticAddress || o.GetName() == workerv1.SettingInstanceAccessWildcardDNS)
})
