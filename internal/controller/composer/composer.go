// Package composer is the embedded composer, the operator's default mode: it gathers the observed state,
// calls the composition functions in-process with the request and response types Crossplane uses, applies
// their output with server-side apply under one field manager, prunes what it created and no longer wants,
// and writes the InstanceTypes' status. Every event maps to one key, so a burst of node events collapses
// into one recompute, and a recompute with nothing changed writes nothing.
package composer

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/instancetype"
	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/internal/embedded"
	"github.com/gpustack/gpustack-operator/internal/metrics"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/pools"
)

// chainKey is the one key every event maps to.
var chainKey = reconcile.Request{NamespacedName: client.ObjectKey{Name: "chain"}}

// Reconciler composes the whole chain.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Kueue says what the running Kueue's configuration lacks, and whether it was read yet; nil sets no
	// KueueConfigured condition.
	Kueue interface{ Problems() ([]string, bool) }
	// KueueChanged brings the composer back when that answer changes.
	KueueChanged <-chan event.GenericEvent

	// Now is the clock a pool's drain grace period is measured with; time.Now when nil.
	Now func() time.Time

	// published are the InstanceTypes whose views the metrics show, so those of types that are gone can go.
	published map[string]bool
	// chain keeps the nodes and what was composed of them between recomputes, and profiled the inputs each
	// node was last profiled from: a recompute profiles and composes again only what changed.
	chain    *embedded.Chain
	profiled map[string]nodeInputs
	// cpu sums each node's Pods' CPU requests from their events, once SetupWithManager registered it.
	cpu cpuIndex
	// verified are the composed objects found as desired, kept between recomputes (applier.verified).
	verified map[string]verifiedAt
}

// now reads the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// +kubebuilder:rbac:groups="",resources=nodes;namespaces;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancetypes;instancetypeflavors,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instancetypes/status;instancetypes/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=devices;settings,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;clusterqueues;localqueues,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks,verbs=get;list;watch

// Reconcile recomputes the chain.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	res, err := r.recompute(ctx)
	metrics.ComposeDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		metrics.ComposeFailures.Inc()
	}
	return res, err
}

// recompute composes the whole chain once.
func (r *Reconciler) recompute(ctx context.Context) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	if r.verified == nil {
		r.verified = map[string]verifiedAt{}
	}
	a := &applier{client: r.Client, verified: r.verified}

	values, problems, err := settings.Load(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, p := range problems {
		logger.Info(p)
	}
	fnSettings := values.Functions()
	fnSettings.NodeDevicesCheckActive, err = r.nodeDevicesCheckActive(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.profileNodes(ctx); err != nil {
		return reconcile.Result{}, err
	}

	out, _, err := r.chain.Flavors(ctx, fnSettings)
	if err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot compose flavors")
	}
	for _, w := range out.Warnings {
		logger.Info("flavors: " + w)
	}
	// A failure composes what it can and prunes nonetheless: one object that cannot be written never holds
	// back the rest of the cluster's pools. The errors come back together, so the key is retried.
	var errs []error
	wantFlavors, wantCatalog := map[string]bool{}, map[string]bool{}
	for _, o := range out.Objects {
		switch o.GetKind() {
		case "ResourceFlavor":
			wantFlavors[o.GetName()] = true
		case "InstanceTypeFlavor":
			wantCatalog[o.GetName()] = true
		}
		annotations := o.GetAnnotations()
		if annotations[workerv1.AnnotationComposePolicy] != workerv1.ComposePolicyCreateOnly {
			_, err = a.apply(ctx, o)
		} else {
			// Create-only objects (derived InstanceTypes) are created once and then belong to their users. The
			// chain keeps its answer: this copy loses the policy, not the answer.
			o = o.DeepCopy()
			annotations = o.GetAnnotations()
			delete(annotations, workerv1.AnnotationComposePolicy)
			o.SetAnnotations(annotations)
			_, err = a.create(ctx, o)
		}
		if err != nil {
			logger.Error(err, "cannot compose an object of the node inventory")
			errs = append(errs, err)
		}
	}

	// The LocalQueues as they stand: a type that fails keeps its own, and prune removes the others it no
	// longer wants.
	queues := &kueuev1beta2.LocalQueueList{}
	if err := r.Client.List(ctx, queues); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot list LocalQueues")
	}
	types, err := r.composeTypes(ctx, a, queues.Items, fnSettings)
	// Every type composed took in the nodes' changes; the chain forgets the pools of the others.
	r.chain.Commit()
	if err != nil {
		return reconcile.Result{}, err
	}
	// Prune only after the queues stopped naming the flavors they no longer want.
	errs = append(errs, r.prune(ctx, a, types.live, wantFlavors, wantCatalog, types.wantQueues, queues.Items))
	var res reconcile.Result
	if !types.nextDrain.IsZero() {
		// Nothing else need happen for a held pool's grace to end: come back then to drain it.
		res.RequeueAfter = max(types.nextDrain.Sub(r.now()), time.Second)
	}
	return res, errors.Join(errs...)
}

// composedTypes is what composing the InstanceTypes leaves for the rest of the recompute.
type composedTypes struct {
	// live are the InstanceTypes that exist; wantQueues the LocalQueues wanted, by namespace/name.
	live, wantQueues map[string]bool
	// nextDrain is the earliest time a held pool's grace ends; zero when no pool is held for want of flavors.
	nextDrain time.Time
}

// composeTypes runs the instancetype function for every InstanceType. It returns the InstanceTypes that
// exist, the LocalQueues wanted and when a held pool's grace ends. A type that cannot be composed or written keeps the
// queues it has, gets a ComposeFailed condition (and an event when that changes), and does not stop the
// others; the returned error joins its failures (and only an error listing the cluster aborts).
func (r *Reconciler) composeTypes(ctx context.Context, a *applier, queues []kueuev1beta2.LocalQueue, s xrs.FunctionSettings) (composedTypes, error) {
	namespaces, err := UserNamespaces(ctx, r.Client)
	if err != nil {
		return composedTypes{}, err
	}
	types := &workerv1.InstanceTypeList{}
	if err := r.Client.List(ctx, types); err != nil {
		return composedTypes{}, errors.Wrap(err, "cannot list InstanceTypes")
	}
	liveTypes, wantQueues := map[string]bool{}, map[string]bool{}
	var nextDrain time.Time
	now := metav1.NewTime(r.now()).Rfc3339Copy()
	keepQueues := func(typ string) {
		for _, lq := range queues {
			if lq.Annotations[workerv1.AnnotationQueue] == typ {
				wantQueues[lq.Namespace+"/"+lq.Name] = true
			}
		}
	}
	var errs []error
	// failed reports a type that cannot be composed (retry false: its own spec is at fault, so retrying the
	// same spec changes nothing) or written, keeping the queues it has.
	failed := func(it *workerv1.InstanceType, err error, retry bool) {
		keepQueues(it.Name)
		if retry {
			errs = append(errs, err)
		}
		// The event goes with a change of the condition only: a type failing the same way on every retry (while
		// Kueue's webhook starts, say) would send one per retry, and client-go's spam filter, once an object has
		// had 25, drops its next events for minutes, whatever they say.
		if !apimeta.SetStatusCondition(&it.Status.Conditions, composeFailed(err, it.Generation)) {
			return
		}
		r.Recorder.Eventf(it, corev1.EventTypeWarning, ReasonComposeFailed, "cannot compose the pool: %v", err)
		if err := r.Client.Status().Update(ctx, it); err != nil {
			errs = append(errs, errors.Wrapf(err, "cannot update the status of InstanceType %s", it.Name))
		}
	}
	for i := range types.Items {
		it := &types.Items[i]
		liveTypes[it.Name] = true
		if it.Labels[gatewayv1.LabelDispatch] == "true" {
			// A member's type mirrored on a manager cluster: the worker-gateway writes its queues and status.
			continue
		}
		deleting := it.DeletionTimestamp != nil
		cq, err := r.queueOf(ctx, it.Name)
		if err != nil {
			failed(it, err, true)
			continue
		}
		if deleting && cq == nil {
			// No queue of ours is left (a ClusterQueue of the same name that the composer did not make is not
			// its to delete): the type may go.
			errs = append(errs, r.release(ctx, it))
			continue
		}
		if !deleting && !controllerutil.ContainsFinalizer(it, workerv1.FinalizerControlled) {
			// Copied only here: the recompute visits every type, and nearly all have the finalizer already.
			orig := it.DeepCopy()
			controllerutil.AddFinalizer(it, workerv1.FinalizerControlled)
			if err := r.Client.Patch(ctx, it, finalizersOf(orig)); err != nil {
				failed(it, errors.Wrapf(err, "cannot add the finalizer of InstanceType %s", it.Name), true)
				continue
			}
		}
		spec := xrs.InstanceTypePoolSpec{
			Name: it.Name, Generation: it.Generation, Labels: it.Labels, Type: it.Spec, Deleting: deleting,
			Namespaces: namespaces, Settings: s, NoFlavorsSince: it.Status.NoFlavorsSince, Now: now, ReservingWorkloads: reserving(cq),
			QueueStarted: started(cq),
		}
		out, status, err := r.chain.InstanceType(ctx, &spec)
		if err != nil {
			failed(it, err, false)
			continue
		}
		nextDrain = earlierDrain(nextDrain, &spec)
		// A queue already deleted has its HoldAndDrain: applying to it could recreate it once Kueue lets it go.
		terminating := cq != nil && cq.DeletionTimestamp != nil
		if err := r.applyPool(ctx, a, out.Objects, wantQueues, !terminating); err != nil {
			failed(it, err, true)
			continue
		}
		metrics.ObserveInstanceType(it.Name, status)
		status.Conditions = append([]metav1.Condition(nil), it.Status.Conditions...)
		apimeta.SetStatusCondition(&status.Conditions, poolReady(status, it.Generation))
		if r.Kueue != nil {
			if problems, checked := r.Kueue.Problems(); checked {
				c := kueueConfigured(problems, it.Generation)
				if apimeta.SetStatusCondition(&status.Conditions, c) && c.Status == metav1.ConditionFalse {
					r.Recorder.Event(it, corev1.EventTypeWarning, ReasonKueueMisconfigured, c.Message)
				}
			}
		}
		if !apiequality.Semantic.DeepEqual(it.Status, status) {
			it.Status = status
			if err := r.Client.Status().Update(ctx, it); err != nil {
				errs = append(errs, errors.Wrapf(err, "cannot update the status of InstanceType %s", it.Name))
			}
		}
		if deleting && !terminating {
			// The queue now holds and drains; Kueue's own finalizer keeps it until no Workload is left, and its
			// going brings the composer back to release the type.
			r.Recorder.Eventf(it, corev1.EventTypeNormal, ReasonDraining,
				"the type is being deleted: its ClusterQueue holds and drains %d workload(s), then goes", cq.Status.ReservingWorkloads)
			errs = append(errs, a.delete(ctx, cq))
		}
	}
	r.forgetGone(liveTypes)
	return composedTypes{live: liveTypes, wantQueues: wantQueues, nextDrain: nextDrain}, errors.Join(errs...)
}

// reserving is how many Workloads a pool's queue reserves quota for; none without a queue.
func reserving(cq *kueuev1beta2.ClusterQueue) int32 {
	if cq == nil {
		return 0
	}
	return cq.Status.ReservingWorkloads
}

// started reports whether a pool's queue has started: it exists and is off the empty-plan hold.
func started(cq *kueuev1beta2.ClusterQueue) bool {
	return cq != nil && cq.Annotations[workerv1.AnnotationEmptyPlanHold] != "true"
}

// earlierDrain returns the earlier of next (zero: none yet) and the time the pool's grace ends, when that is
// still to come.
func earlierDrain(next time.Time, spec *xrs.InstanceTypePoolSpec) time.Time {
	at, ok := instancetype.DrainAt(spec)
	if !ok || !at.After(spec.Now.Time) || (!next.IsZero() && !at.Before(next)) {
		return next
	}
	return at
}

// forgetGone removes the metrics of the InstanceTypes that no longer exist.
func (r *Reconciler) forgetGone(live map[string]bool) {
	for name := range r.published {
		if !live[name] {
			metrics.ForgetInstanceType(name)
		}
	}
	r.published = live
}

// applyPool applies one pool's objects (only notes them when write is false), noting its LocalQueues in
// wantQueues; it stops at the first failure.
func (r *Reconciler) applyPool(ctx context.Context, a *applier, objects []*unstructured.Unstructured, wantQueues map[string]bool, write bool) error {
	for _, o := range objects {
		if o.GetKind() == "LocalQueue" {
			wantQueues[o.GetNamespace()+"/"+o.GetName()] = true
		}
		if !write {
			continue
		}
		if _, err := a.apply(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// queueOf returns the type's ClusterQueue, nil when there is none or the composer did not make it. With Kueue's
// CRDs gone there is no queue either: a type being deleted is then released, not pinned by its finalizer.
func (r *Reconciler) queueOf(ctx context.Context, name string) (*kueuev1beta2.ClusterQueue, error) {
	cq := &kueuev1beta2.ClusterQueue{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, cq); err != nil {
		if apimeta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, errors.Wrapf(client.IgnoreNotFound(err), "cannot get the ClusterQueue of InstanceType %s", name)
	}
	if !composedByUs(cq) {
		return nil, nil
	}
	return cq, nil
}

// release lets a deleted InstanceType go once its queue is gone.
func (r *Reconciler) release(ctx context.Context, it *workerv1.InstanceType) error {
	if controllerutil.ContainsFinalizer(it, workerv1.FinalizerControlled) {
		orig := it.DeepCopy()
		controllerutil.RemoveFinalizer(it, workerv1.FinalizerControlled)
		return errors.Wrapf(r.Client.Patch(ctx, it, finalizersOf(orig)), "cannot release InstanceType %s", it.Name)
	}
	return nil
}

// finalizersOf is the patch of an InstanceType's finalizers alone, against its resourceVersion so another
// writer's finalizer is never lost. A whole-object update would send the spec again as the Go type encodes it,
// dropping fields written as false (a feature's coresPercentageOvercommit), which the immutable feature
// refuses: the InstanceType would never get its finalizer, or never lose it.
func finalizersOf(orig *workerv1.InstanceType) client.Patch {
	return client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
}

// prune deletes the composer's objects that are no longer wanted: flavors, catalog entries, queues of types
// that are gone, and entrance queues of namespaces or types that are gone.
func (r *Reconciler) prune(ctx context.Context, a *applier, liveTypes, flavors, catalog, localQueues map[string]bool, queues []kueuev1beta2.LocalQueue) error {
	cqs := &kueuev1beta2.ClusterQueueList{}
	if err := r.Client.List(ctx, cqs, client.MatchingLabels{workerv1.LabelResourceType: workerv1.ResourceTypeInstTypes}); err != nil {
		return errors.Wrap(err, "cannot list ClusterQueues")
	}
	for i := range cqs.Items {
		if !liveTypes[cqs.Items[i].Name] && composedByUs(&cqs.Items[i]) {
			if err := a.delete(ctx, &cqs.Items[i]); err != nil {
				return err
			}
		}
	}
	for i := range queues {
		lq := &queues[i]
		if _, ours := lq.Annotations[workerv1.AnnotationQueue]; ours && composedByUs(lq) && !localQueues[lq.Namespace+"/"+lq.Name] {
			if err := a.delete(ctx, lq); err != nil {
				return err
			}
		}
	}
	rfs := &kueuev1beta2.ResourceFlavorList{}
	if err := r.Client.List(ctx, rfs, client.MatchingLabels{workerv1.LabelResourceType: workerv1.ResourceTypeNodes}); err != nil {
		return errors.Wrap(err, "cannot list ResourceFlavors")
	}
	for i := range rfs.Items {
		if !flavors[rfs.Items[i].Name] && composedByUs(&rfs.Items[i]) {
			if err := a.delete(ctx, &rfs.Items[i]); err != nil {
				return err
			}
		}
	}
	itfs := &workerv1.InstanceTypeFlavorList{}
	if err := r.Client.List(ctx, itfs); err != nil {
		return errors.Wrap(err, "cannot list InstanceTypeFlavors")
	}
	for i := range itfs.Items {
		if !catalog[itfs.Items[i].Name] && composedByUs(&itfs.Items[i]) {
			if err := a.delete(ctx, &itfs.Items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// nodeInputs are the versions of what a node's profile is read from: while none changes, neither does the
// profile.
type nodeInputs struct {
	node, devices     string
	cpuRequestedMilli int64
}

// profileNodes brings the chain's nodes up to date with the cluster: a node whose labels, Devices inventory or
// Pods' CPU requests changed since it was last profiled is profiled again, a node that is gone is removed, and
// the others stay as the chain has them. A node whose labels cannot be read gets a warning event (once per
// change) and is left out; the rest of the cluster is still composed.
func (r *Reconciler) profileNodes(ctx context.Context) error {
	if r.chain == nil {
		r.chain, r.profiled = embedded.NewChain(), map[string]nodeInputs{}
	}
	// The lists are read, never modified: the cache's objects serve without a copy of every Node.
	list := &corev1.NodeList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return errors.Wrap(err, "cannot list nodes")
	}
	devices := &workerv1.DevicesList{}
	if err := r.Client.List(ctx, devices, client.UnsafeDisableDeepCopy); err != nil {
		return errors.Wrap(err, "cannot list Devices")
	}
	byNode := make(map[string]*workerv1.Devices, len(devices.Items))
	for i := range devices.Items {
		byNode[devices.Items[i].Name] = &devices.Items[i]
	}
	requested, err := r.cpuRequested(ctx)
	if err != nil {
		return err
	}
	present := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		node := &list.Items[i]
		present[node.Name] = true
		in := nodeInputs{node: node.ResourceVersion, cpuRequestedMilli: requested[node.Name]}
		if d := byNode[node.Name]; d != nil {
			in.devices = d.ResourceVersion
		}
		if last, ok := r.profiled[node.Name]; ok && last == in {
			continue
		}
		r.profiled[node.Name] = in
		n, err := r.profile(node, byNode[node.Name], requested[node.Name])
		if err != nil {
			r.chain.Remove(node.Name)
			continue
		}
		r.chain.Set(n)
	}
	for name := range r.profiled {
		if !present[name] {
			delete(r.profiled, name)
			r.chain.Remove(name)
		}
	}
	return nil
}

// profile reads one node's profile from its labels and ledger, or returns why it cannot, with a warning event.
func (r *Reconciler) profile(node *corev1.Node, devices *workerv1.Devices, cpuRequestedMilli int64) (pools.Node, error) {
	n, err := pools.NodeFromLabels(node.Name, node.Labels, node.Annotations)
	if err != nil {
		r.Recorder.Eventf(node, corev1.EventTypeWarning, "ProfileUnreadable", "%v; the node is left out of every pool", err)
		return pools.Node{}, err
	}
	if err := n.CheckInventory(devices); err != nil {
		// The agent writes the labels (through NFD) and the inventory one after the other: they may disagree
		// for a moment, and the pools' drain grace period keeps such a blink from stopping anyone.
		r.Recorder.Eventf(node, corev1.EventTypeWarning, ReasonInventoryDisagrees, "%v; the node is left out of every pool", err)
		return pools.Node{}, err
	}
	n.AttachLedger(devices)
	n.CPU.RequestedMilli = cpuRequestedMilli
	return n, nil
}

// cpuRequested sums the CPU requests of the Pods bound to each node that have not finished (cpuOf), from the
// index the Pods' events keep, or, before it can answer, from every Pod in the cache.
func (r *Reconciler) cpuRequested(ctx context.Context) (map[string]int64, error) {
	if sums, ok := r.cpu.sums(); ok {
		return sums, nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list Pods")
	}
	out := map[string]int64{}
	for i := range pods.Items {
		if c, ok := cpuOf(&pods.Items[i]); ok {
			out[c.node] += c.milli
		}
	}
	return out, nil
}

// UserNamespaces are the namespaces that get entrance queues, sorted: all but the system ones and those being
// deleted.
func UserNamespaces(ctx context.Context, c client.Reader) ([]string, error) {
	list := &corev1.NamespaceList{}
	if err := c.List(ctx, list); err != nil {
		return nil, errors.Wrap(err, "cannot list namespaces")
	}
	var out []string
	for _, ns := range list.Items {
		if !SystemNamespace(ns.Name) && ns.DeletionTimestamp == nil {
			out = append(out, ns.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// SystemNamespace reports whether a namespace belongs to the system and gets no entrance queue: one of
// workerv1.SystemNamespaces, or any other of the cluster's own (kube-*).
func SystemNamespace(name string) bool {
	return workerv1.IsSystemNamespace(name) || strings.HasPrefix(name, "kube-")
}

// nodeDevicesCheckActive reports whether the gpustack-node-devices AdmissionCheck exists and is Active.
func (r *Reconciler) nodeDevicesCheckActive(ctx context.Context) (bool, error) {
	ac := &kueuev1beta2.AdmissionCheck{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: instancetype.NodeDevicesCheck}, ac); err != nil {
		return false, client.IgnoreNotFound(errors.Wrap(err, "cannot get the node-devices AdmissionCheck"))
	}
	for _, c := range ac.Status.Conditions {
		if c.Type == kueuev1beta2.AdmissionCheckActive {
			return c.Status == "True", nil
		}
	}
	return false, nil
}

// SetupWithManager registers the composer. Every watched event maps to the one chain key.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	toChain := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{chainKey}
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("composer")
	// A Pod matters to the chain only through its node's CPU sum: the index's handler brings the composer back
	// after a sum changed, and not for the Pods' other events.
	pods, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Pod{})
	if err != nil {
		return errors.Wrap(err, "cannot watch Pods")
	}
	cpuChanged := make(chan event.GenericEvent, 1)
	registration, err := pods.AddEventHandler(r.cpu.handler(func() {
		// One pending event is enough: the recompute it brings reads the sums as they are then.
		select {
		case cpuChanged <- event.GenericEvent{Object: &corev1.Pod{}}:
		default:
		}
	}))
	if err != nil {
		return errors.Wrap(err, "cannot watch Pods")
	}
	r.cpu.watch(registration.HasSynced)
	b = b.WatchesRawSource(source.Channel(cpuChanged, toChain))
	for _, o := range []client.Object{
		&corev1.Node{}, &corev1.Namespace{}, &workerv1.Devices{}, &workerv1.InstanceType{},
		&workerv1.InstanceTypeFlavor{}, &workerv1.Setting{}, &kueuev1beta2.ResourceFlavor{},
		&kueuev1beta2.ClusterQueue{}, &kueuev1beta2.LocalQueue{}, &kueuev1beta2.AdmissionCheck{},
	} {
		b = b.Watches(o, toChain)
	}
	if r.KueueChanged != nil {
		b = b.WatchesRawSource(source.Channel(r.KueueChanged, toChain))
	}
	return b.Complete(r)
}
