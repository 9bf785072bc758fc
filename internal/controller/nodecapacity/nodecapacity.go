// Package nodecapacity advertises on each Node the counting keys of its sliceable cards (.sliced.units and the
// slice budgets) and of its partitioned cards (.partitioned.units and one key per profile) as extended
// resources in its status, so the scheduler weighs a slice's budget or a partition's profile against the
// node. The device plugin serves the countable pools; these keys have no devices behind them. It is the
// worker's one writer of Node status, so it also shows there, as a condition, a node whose card-count labels
// its Devices inventory does not back (the composer leaves such a node out of the pools).
package nodecapacity

import (
	"context"
	"maps"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
	"github.com/gpustack/gpustack-operator/pools"
)

// FieldManager owns the counting keys and the inventory condition in Node status.
const FieldManager = "gpustack-operator-node-capacity"

// ConditionInventoryDisagrees is the Node condition, True while the node's card-count labels claim cards that
// its Devices inventory does not list; absent otherwise.
const ConditionInventoryDisagrees corev1.NodeConditionType = "GPUStackInventoryDisagrees"

// ReasonLabelsNotBacked is the reason of ConditionInventoryDisagrees.
const ReasonLabelsNotBacked = "LabelsNotBacked"

// countingSuffixes end the resource names this controller owns, with every name that holds
// partitionedInfix (the plugin's own pool, <base>.partitioned, does not).
var countingSuffixes = []string{".sliced.units", ".sliced.memory-percentage", ".sliced.memory-mib", ".sliced.cores-percentage"}

const partitionedInfix = ".partitioned."

// Reconciler keeps one node's counting keys.
type Reconciler struct {
	Client client.Client
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=devices,verbs=get;list;watch

// Reconcile applies the node's counting keys when they differ from what the Node shows.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want := map[string]int64{}
	d := &workerv1.Devices{}
	switch err := r.Client.Get(ctx, req.NamespacedName, d); {
	case err == nil:
		want = pools.CountingCapacity(d.Spec)
		maps.Copy(want, pools.PartitionCounting(d))
	case client.IgnoreNotFound(err) != nil:
		return reconcile.Result{}, errors.Wrap(err, "cannot get the node's Devices")
	default:
		d = nil
	}
	problem := inventoryProblem(node, d)
	shown := inventoryCondition(node)
	if equal(current(node), want) && shown.Message == problem {
		return reconcile.Result{}, nil
	}
	list := corev1.ResourceList{}
	for k, v := range want {
		list[corev1.ResourceName(k)] = *resource.NewQuantity(v, resource.DecimalSI)
	}
	// Server-side apply of the counting keys and the condition alone: what this manager no longer applies is
	// removed, and the kubelet's keys, conditions, nodeInfo and daemonEndpoints are never touched (a typed Node
	// would own them all).
	status := corev1ac.NodeStatus()
	if len(list) > 0 {
		status = status.WithCapacity(list).WithAllocatable(list.DeepCopy())
	}
	if problem != "" {
		since := metav1.Now()
		if shown.Message != "" {
			since = shown.LastTransitionTime
		}
		status = status.WithConditions(corev1ac.NodeCondition().WithType(ConditionInventoryDisagrees).
			WithStatus(corev1.ConditionTrue).WithReason(ReasonLabelsNotBacked).WithMessage(problem).
			WithLastTransitionTime(since).WithLastHeartbeatTime(since))
	}
	return reconcile.Result{}, errors.Wrap(r.Client.Status().Apply(ctx, corev1ac.Node(node.Name).WithStatus(status),
		client.FieldOwner(FieldManager), client.ForceOwnership), "cannot apply the node's counting keys")
}

// inventoryProblem says why the node's card-count labels are not backed by its inventory (d, nil when it has
// none), "" when they are or when its labels cannot be read at all (the composer reports those).
func inventoryProblem(node *corev1.Node, d *workerv1.Devices) string {
	n, err := pools.NodeFromLabels(node.Name, node.Labels, node.Annotations)
	if err != nil {
		return ""
	}
	if err := n.CheckInventory(d); err != nil {
		return err.Error() + "; the node is left out of every pool"
	}
	return ""
}

// inventoryCondition returns the node's ConditionInventoryDisagrees, a zero one when it shows none.
func inventoryCondition(node *corev1.Node) corev1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == ConditionInventoryDisagrees && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// current returns the counting keys the Node shows.
func current(node *corev1.Node) map[string]int64 {
	var out map[string]int64
	for k, v := range node.Status.Capacity {
		if !owned(string(k)) {
			continue
		}
		if out == nil {
			out = map[string]int64{}
		}
		out[string(k)] = v.Value()
	}
	return out
}

// owned reports whether the resource is a counting key of this controller.
func owned(name string) bool {
	if strings.Contains(name, partitionedInfix) {
		return true
	}
	for _, s := range countingSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

func equal(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// SetupWithManager registers the reconciler, woken by Nodes and by Devices objects (named after their node).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("nodecapacity").For(&corev1.Node{}, builder.WithPredicates(cachepolicy.NodeChanged)).
		Watches(&workerv1.Devices{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
		})).Complete(r)
}
