package cpuinfo

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/cpureporter"
)

// Reconciler keeps the NodeFeatureRule gpustack-cpu-info in step with the nodes' cpu-info NodeFeatures.
type Reconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,namespace=gpustack-system,resources=nodefeatures,verbs=get;list;watch
// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,resources=nodefeaturerules,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,resources=nodefeaturerules,verbs=update,resourceNames=gpustack-cpu-info

// Reconcile writes the rule from every node's reported facts; nothing when it already says that.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	list := &nfdv1alpha1.NodeFeatureList{}
	if err := r.Client.List(ctx, list, client.InNamespace(workerv1.SystemNamespace),
		client.MatchingLabels{"app.kubernetes.io/part-of": cpureporter.PartOf}); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot list the cpu-info NodeFeatures")
	}
	var reported []map[string]string
	for _, nf := range list.Items {
		if f, ok := nf.Spec.Features.Attributes[cpureporter.Feature]; ok {
			reported = append(reported, f.Elements)
		}
	}
	spec := Rules(reported)
	rule := &nfdv1alpha1.NodeFeatureRule{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: RuleName}, rule)
	if apierrors.IsNotFound(err) {
		rule = &nfdv1alpha1.NodeFeatureRule{
			ObjectMeta: metav1.ObjectMeta{Name: RuleName, Labels: map[string]string{"app.kubernetes.io/part-of": "gpustack-operator"}},
			Spec:       spec,
		}
		return reconcile.Result{}, errors.Wrap(r.Client.Create(ctx, rule), "cannot create NodeFeatureRule "+RuleName)
	}
	if err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot get NodeFeatureRule "+RuleName)
	}
	if apiequality.Semantic.DeepEqual(rule.Spec, spec) {
		return reconcile.Result{}, nil
	}
	rule.Spec = spec
	return reconcile.Result{}, errors.Wrap(r.Client.Update(ctx, rule), "cannot update NodeFeatureRule "+RuleName)
}

// SetupWithManager runs the reconciler for every change of a cpu-info NodeFeature and of the rule itself (an
// edit by hand is undone), always as the one request of the rule.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: RuleName}}}
	})
	cpuInfo := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()["app.kubernetes.io/part-of"] == cpureporter.PartOf
	})
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == RuleName })
	return ctrl.NewControllerManagedBy(mgr).Named("cpuinfo").
		Watches(&nfdv1alpha1.NodeFeature{}, one, builder.WithPredicates(cpuInfo)).
		Watches(&nfdv1alpha1.NodeFeatureRule{}, one, builder.WithPredicates(ours)).
		Complete(r)
}
