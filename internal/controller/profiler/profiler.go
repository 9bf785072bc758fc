// Package profiler is the worker's node profiler: for every node it writes the worker NodeFeature
// <node>-gpustack-worker with gpustack.ai/managed and the general.feature.gpustack.ai keys of the node's CPU,
// which NFD copies onto the Node; and it stamps the node's Devices object with the same identity.
package profiler

import (
	"context"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/pools"
)

// PartOf is the app.kubernetes.io/part-of label of the worker's NodeFeatures.
const PartOf = "gpustack-operator-worker"

// Reconciler profiles one node.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,namespace=gpustack-system,resources=nodefeatures,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=devices,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=settings,verbs=get;list;watch

// Reconcile writes the node's worker NodeFeature and stamps its Devices object.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			// The worker deletes the Devices object of a node that is gone.
			return reconcile.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: req.Name}}))
		}
		return reconcile.Result{}, errors.Wrap(err, "cannot get node")
	}
	values, _, err := settings.Load(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.publish(ctx, node, values.Bool(workerv1.SettingNodeManagementManual), values.Bool(workerv1.SettingInstanceTypeMixedOnNode)); err != nil {
		r.Recorder.Eventf(node, corev1.EventTypeWarning, "ProfileFailed", "cannot publish the worker NodeFeature: %v", err)
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.stampDevices(ctx, node)
}

// publish writes the worker NodeFeature when its labels differ. An existing gpustack.ai/managed value is kept:
// it is how an administrator takes a node out of its pools. With mixedOnNode off, a node without
// accelerators is marked cpu-only, the label its CPU flavor asks for.
func (r *Reconciler) publish(ctx context.Context, node *corev1.Node, manual, mixedOnNode bool) error {
	cores := node.Status.Capacity.Cpu().Value()
	nf := &nfdv1alpha1.NodeFeature{}
	key := client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: workerv1.NodeFeatureName(node.Name, workerv1.NodeFeatureProfile)}
	err := r.Client.Get(ctx, key, nf)
	if err != nil && !apierrors.IsNotFound(err) {
		return errors.Wrap(err, "cannot get worker NodeFeature")
	}
	exists := err == nil
	managed := ""
	if !manual {
		managed = "true"
		if v, ok := nf.Spec.Labels[workerv1.LabelManaged]; exists && ok {
			managed = v
		}
	}
	labels := pools.WorkerLabels(node.Labels[workerv1.LabelCPUVendor], node.Annotations[workerv1.AnnotationCPUName],
		node.Labels[workerv1.LabelCPUFamily], node.Labels[workerv1.LabelCPUModelID], cores, managed)
	// A node whose labels cannot be read is not marked: the composer reports it and leaves it out of the pools.
	if n, err := pools.NodeFromLabels(node.Name, node.Labels, node.Annotations); err == nil && pools.CPUOnly(n, mixedOnNode) {
		labels[workerv1.LabelCPUOnly] = "true"
	}
	if !exists {
		nf = &nfdv1alpha1.NodeFeature{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
				nfdv1alpha1.NodeFeatureObjNodeNameLabel: node.Name, "app.kubernetes.io/part-of": PartOf,
			}},
			Spec: nfdv1alpha1.NodeFeatureSpec{Labels: labels},
		}
		return errors.Wrap(r.Client.Create(ctx, nf), "cannot create worker NodeFeature")
	}
	if apiequality.Semantic.DeepEqual(nf.Spec.Labels, labels) {
		return nil
	}
	nf.Spec.Labels = labels
	return errors.Wrap(r.Client.Update(ctx, nf), "cannot update worker NodeFeature")
}

// stampDevices copies the node's platform, managed flag and CPU key onto its Devices object. Once the node's
// CPU key is known, a key it had before (the fallback key before its CPU's brand was read, as after an upgrade
// from a chart without the cpu-info reporter) is taken off: the profiler writes no other general labels there.
func (r *Reconciler) stampDevices(ctx context.Context, node *corev1.Node) error {
	d := &workerv1.Devices{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: node.Name}, d); err != nil {
		return client.IgnoreNotFound(errors.Wrap(err, "cannot get Devices"))
	}
	want := map[string]string{
		workerv1.LabelOS: node.Labels[workerv1.LabelOS], workerv1.LabelArch: node.Labels[workerv1.LabelArch],
		workerv1.LabelManaged: node.Labels[workerv1.LabelManaged],
	}
	changed := false
	if n, err := pools.NodeFromLabels(node.Name, node.Labels, node.Annotations); err == nil && n.CPU.Key != pools.Generic {
		key := workerv1.GeneralPrefix + n.CPU.Key
		want[key] = "true"
		for k := range d.Labels {
			if strings.HasPrefix(k, workerv1.GeneralPrefix) && k != key {
				delete(d.Labels, k)
				changed = true
			}
		}
	}
	for k, v := range want {
		if v == "" || d.Labels[k] == v {
			continue
		}
		if d.Labels == nil {
			d.Labels = map[string]string{}
		}
		d.Labels[k], changed = v, true
	}
	if !changed {
		return nil
	}
	return errors.Wrap(r.Client.Update(ctx, d), "cannot stamp Devices")
}

// SetupWithManager registers the profiler: it runs per Node, and again for every node when a Setting or a
// node's NodeFeature or Devices object changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	byNodeName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[nfdv1alpha1.NodeFeatureObjNodeNameLabel]
		if _, ok := o.(*workerv1.Devices); ok {
			name = o.GetName()
		}
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	})
	allNodes := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		nodes := &corev1.NodeList{}
		if err := mgr.GetClient().List(ctx, nodes); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, len(nodes.Items))
		for i, n := range nodes.Items {
			reqs[i] = reconcile.Request{NamespacedName: client.ObjectKey{Name: n.Name}}
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).Named("profiler").
		For(&corev1.Node{}, builder.WithPredicates(cachepolicy.NodeChanged)).
		Watches(&nfdv1alpha1.NodeFeature{}, byNodeName).
		Watches(&workerv1.Devices{}, byNodeName).
		Watches(&workerv1.Setting{}, allNodes).
		Complete(r)
}
