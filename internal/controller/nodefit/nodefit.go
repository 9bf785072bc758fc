// Package nodefit keeps each node's fit labels (how big a slice its freest card can still take, how many cards
// can still give a share) in a NodeFeature <node>-gpustack-fit, which NFD copies onto the Node. A burst of
// ledger changes is written once: a node is looked at FitWindow after its first change.
package nodefit

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/profiler"
	"github.com/gpustack/gpustack-operator/pools"
)

// FitWindow is how long a node's changes are gathered before its fit labels are written.
const FitWindow = 3 * time.Second

// Reconciler writes one node's fit labels.
type Reconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=devices,verbs=get;list;watch
// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,namespace=gpustack-system,resources=nodefeatures,verbs=get;list;watch;create;update;delete

// Reconcile writes the node's fit labels when they changed; a node no longer managed, or without cards, has
// none, and its NodeFeature goes.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	want := map[string]string{}
	node := &corev1.Node{}
	err := r.Client.Get(ctx, req.NamespacedName, node)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot get node")
	}
	if err == nil && node.Labels[workerv1.LabelManaged] == "true" {
		d := &workerv1.Devices{}
		switch err := r.Client.Get(ctx, req.NamespacedName, d); {
		case err == nil:
			want = pools.FitLabels(d)
		case !apierrors.IsNotFound(err):
			return reconcile.Result{}, errors.Wrap(err, "cannot get the node's Devices")
		}
	}
	nf := &nfdv1alpha1.NodeFeature{}
	key := client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: workerv1.NodeFeatureName(req.Name, workerv1.NodeFeatureFit)}
	err = r.Client.Get(ctx, key, nf)
	switch {
	case client.IgnoreNotFound(err) != nil:
		return reconcile.Result{}, errors.Wrap(err, "cannot get the fit NodeFeature")
	case apierrors.IsNotFound(err) && len(want) == 0:
		return reconcile.Result{}, nil
	case apierrors.IsNotFound(err):
		nf = &nfdv1alpha1.NodeFeature{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
				nfdv1alpha1.NodeFeatureObjNodeNameLabel: req.Name, "app.kubernetes.io/part-of": profiler.PartOf,
			}},
			Spec: nfdv1alpha1.NodeFeatureSpec{Labels: want},
		}
		return reconcile.Result{}, errors.Wrap(r.Client.Create(ctx, nf), "cannot create the fit NodeFeature")
	case len(want) == 0:
		return reconcile.Result{}, errors.Wrap(client.IgnoreNotFound(r.Client.Delete(ctx, nf)), "cannot delete the fit NodeFeature")
	case apiequality.Semantic.DeepEqual(nf.Spec.Labels, want):
		return reconcile.Result{}, nil
	}
	nf.Spec.Labels = want
	return reconcile.Result{}, errors.Wrap(r.Client.Update(ctx, nf), "cannot update the fit NodeFeature")
}

// later enqueues the node an object names FitWindow from now; the queue holds a node once, so every change of
// a burst lands in one look.
func later(node func(client.Object) string) handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if name := node(o); name != "" {
			q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}, FitWindow)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// SetupWithManager registers the reconciler, woken FitWindow after a node's Devices object or its Node's labels
// (gpustack.ai/managed) change.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	byName := later(func(o client.Object) string { return o.GetName() })
	return ctrl.NewControllerManagedBy(mgr).Named("nodefit").
		Watches(&workerv1.Devices{}, byName).
		Watches(&corev1.Node{}, byName, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}
