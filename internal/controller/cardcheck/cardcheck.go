// Package cardcheck is the gpustack-node-devices AdmissionCheck: after Kueue reserves quota for a Workload,
// it judges card by card whether a node of the assigned flavor can take it, counting the Pods already on each
// node and the Workloads admitted a moment ago whose Pods are not bound yet, and answers Ready or Retry with a
// reason a person can act on. Quota counts credits; this check keeps a request off a card without room.
package cardcheck

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/controller/constants"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
	"github.com/gpustack/gpustack-operator/internal/metrics"
	"github.com/gpustack/gpustack-operator/internal/settings"
)

// Name is the AdmissionCheck's name; ControllerName is the controller Kueue hands its Workloads to.
const (
	Name           = "gpustack-node-devices"
	ControllerName = "gpustack.ai/node-devices"
)

// retryAfterSeconds is how long a Workload that did not fit waits before Kueue tries it again.
const retryAfterSeconds int32 = 5

// refusedRetryAfterSeconds is how long a Workload this cluster's settings refuse waits before Kueue tries it
// again: settings change seldom, and each try evicts and queues it again.
const refusedRetryAfterSeconds int32 = 60

// RefusedPrefix starts the check's message on a dispatched Workload this cluster's settings refuse; the
// worker-gateway shows the message on the manager's Instance as it is.
const RefusedPrefix = "refused by this cluster's settings: "

// Reconciler judges the Workloads that wait on the check.
type Reconciler struct {
	Client client.Client
	Log    logr.Logger
	// Recorder gets an event on the Workload for each verdict, saying why it waits or where it fits.
	Recorder record.EventRecorder
	// ResourceClaims counts the cards DRA allocated to ResourceClaims as held, where the cluster serves
	// resource.k8s.io/v1; the claims are listed through cachepolicy.IndexResourceClaimsByPool.
	ResourceClaims bool
	// ResourceClaimTemplates counts what the ResourceClaimTemplates a Workload's Pods name ask of this project's
	// DeviceClasses, where the worker may read them.
	ResourceClaimTemplates bool
	// ResourceSlices places a request with selectors only on the cards whose devices match them, reading the
	// devices from the ResourceSlices listed through cachepolicy.IndexResourceSlicesByNode, where the worker may
	// read them.
	ResourceSlices bool

	passed     passedMemo
	ledgers    ledgerIndex
	inflight   inflightMemo
	selections selectionMemo
	locks      manufacturerLocks
}

// concurrentVerdicts is how many Workloads the check judges at once; those that claim the same manufacturer's
// cards wait for each other (manufacturerLocks).
const concurrentVerdicts = 4

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=admissionchecks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=devices,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile judges one Workload whose quota is reserved and whose check is pending.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wl := &kueue.Workload{}
	if err := r.Client.Get(ctx, req.NamespacedName, wl); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	state := checkState(wl)
	if state == nil || state.State != kueue.CheckStatePending || !reserved(wl) || evicted(wl) {
		return reconcile.Result{}, nil
	}
	// A verdict counts the ones before it, up to the Workload's own status written and remembered: another
	// Workload that could want the same cards waits until then.
	specs, refusal, err := r.claimSpecsOf(ctx, wl)
	if err != nil {
		return reconcile.Result{}, err
	}
	pods := workloadPods(wl, specs)
	unlock := r.locks.lock(pods)
	defer unlock()
	start := time.Now()
	v := verdict{state: kueue.CheckStateRetry, reason: ReasonUncountableClaim, message: refusal}
	if refusal == "" {
		if v, err = r.judge(ctx, wl, specs, pods); err != nil {
			return reconcile.Result{}, err
		}
	}
	metrics.AdmissionDecisions.WithLabelValues(string(v.state), v.reason).Inc()
	metrics.AdmissionLatency.Observe(time.Since(start).Seconds())
	eventType := corev1.EventTypeNormal
	if v.state != kueue.CheckStateReady {
		eventType = corev1.EventTypeWarning
	}
	r.Recorder.Event(wl, eventType, v.reason, v.message)
	// The Instance that made the Workload tells the same story, so `kubectl describe instance` shows it.
	inst, err := r.instanceOf(ctx, wl)
	if err != nil {
		return reconcile.Result{}, err
	}
	if inst != nil {
		r.Recorder.Event(inst, eventType, v.reason, v.message)
	}
	state.State, state.Message, state.LastTransitionTime, state.PodSetUpdates = v.state, v.message, metav1.Now(), v.pin
	if v.state == kueue.CheckStateRetry {
		// Kueue gives the quota back and tries again; without a pause it would retry many times a second.
		state.RequeueAfterSeconds = ptr.To(retryAfterSeconds)
		if v.reason == ReasonRefusedHere {
			state.RequeueAfterSeconds = ptr.To(refusedRetryAfterSeconds)
		}
	}
	if err := r.Client.Status().Update(ctx, wl); err != nil {
		return reconcile.Result{}, errors.Wrap(client.IgnoreNotFound(err), "cannot set the check's state")
	}
	if v.state == kueue.CheckStateReady {
		r.passed.remember(wl, time.Now())
	}
	return reconcile.Result{}, nil
}

// Reasons of the check's verdicts, in events and in the decisions metric.
const (
	ReasonFits           = "CardFits"
	ReasonNoAccelerator  = "NoAccelerator"
	ReasonNoSingleFlavor = "NoSingleFlavor"
	ReasonNoCardWithRoom = "NoCardWithRoom"
	ReasonRefusedHere    = "RefusedBySettings"
	// ReasonUncountableClaim: a Pod's ResourceClaimTemplate does not exist, or asks for what the check cannot
	// count (all the devices of a class, alternatives).
	ReasonUncountableClaim = "UncountableClaim"
)

// verdict is the check's answer for one Workload.
type verdict struct {
	state   kueue.CheckState
	reason  string
	message string
	// pin is the podSetUpdates of a Ready answer that keep the Pods on the node they were placed on.
	pin []kueue.PodSetUpdate
}

// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=settings,verbs=get;list;watch

// judge places the Workload's Pods on the nodes of its assigned flavors, after the Pods bound to them and the
// Workloads that passed the check but whose Pods are not bound yet, and pins it where it placed it while
// workload-fit-affinity is true.
func (r *Reconciler) judge(ctx context.Context, wl *kueue.Workload, specs claimSpecs, pods podClaims) (verdict, error) {
	values, _, err := settings.Load(ctx, r.Client)
	if err != nil {
		return verdict{}, errors.Wrap(err, "cannot read the settings")
	}
	if refused := refusal(wl, values); refused != "" {
		return verdict{state: kueue.CheckStateRetry, reason: ReasonRefusedHere, message: refused}, nil
	}
	if len(pods) == 0 {
		return verdict{state: kueue.CheckStateReady, reason: ReasonNoAccelerator, message: "asks for no accelerator"}, nil
	}
	flavor, err := singleFlavor(wl)
	if err != nil {
		return verdict{state: kueue.CheckStateRetry, reason: ReasonNoSingleFlavor, message: err.Error()}, nil
	}
	// The Workloads that passed the check, their Pods and the nodes' Pods come from the cache, with the verdicts
	// it does not show yet; each Workload's Pod is looked up before the nodes' Pods are listed: a Pod bound in
	// between then counts twice (a Retry a moment too early), never zero times (two Workloads given the same
	// last card).
	passed, err := r.passedOn(ctx, wl, flavor)
	if err != nil {
		return verdict{}, err
	}
	var inflight []*kueue.Workload
	mustCharge := map[string][]types.UID{}
	for _, other := range passed {
		unbound, bound, err := r.podsUnbound(ctx, other)
		if err != nil {
			return verdict{}, err
		}
		if unbound {
			inflight = append(inflight, other)
			continue
		}
		for _, p := range bound {
			mustCharge[p.node] = append(mustCharge[p.node], p.uid)
		}
	}
	nodes, err := r.nodesOf(ctx, flavor, mustCharge)
	if err != nil {
		return verdict{}, err
	}
	templates := acceleratedTemplates(wl, false, specs)
	placed, err := decide(nodes, inflight, &r.inflight, r.specsOfInflight(ctx), templates, pods)
	if err != nil {
		return verdict{state: kueue.CheckStateRetry, reason: ReasonNoCardWithRoom,
			message: fmt.Sprintf("pool flavor %s cannot take %s now: %v", flavor, describe(pods), err)}, nil
	}
	if !values.Bool(workerv1.SettingWorkloadFitAffinity) {
		// The scheduler alone picks the node; the device plugin's ledger check at Allocate is the guard.
		return verdict{state: kueue.CheckStateReady, reason: ReasonFits,
			message: "fits on " + onNodes(placed) + " (not pinned there: workload-fit-affinity is false)"}, nil
	}
	return verdict{state: kueue.CheckStateReady, reason: ReasonFits, message: "fits on " + onNodes(placed),
		pin: pinOf(templates, placed, nodes.objects)}, nil
}

// refusal says why this cluster's settings refuse a Workload a manager cluster dispatched here (MultiKueue's
// copy), "" when they do not or the Workload is this cluster's own. This cluster's Instance webhook and gate
// policies never saw the Instance, so its Pods pass the same gates here (instancepod.PodGates): a manager that
// allows privileged Instances cannot run one on a member that does not. The Workload waits, its reason on the
// manager's Instance, and runs once the member's setting allows it.
func refusal(wl *kueue.Workload, values settings.Values) string {
	if _, dispatched := wl.Labels[kueue.MultiKueueOriginLabel]; !dispatched {
		return ""
	}
	var errs field.ErrorList
	for i := range wl.Spec.PodSets {
		errs = append(errs, instancepod.PodGates(&wl.Spec.PodSets[i].Template.Spec,
			values.Bool(workerv1.SettingInstancePrivilegedAllowed), values.Bool(workerv1.SettingInstanceHostPathVolumeAllowed))...)
	}
	if len(errs) == 0 {
		return ""
	}
	return RefusedPrefix + errs.ToAggregate().Error()
}

// nodesOf returns the cards of the managed nodes a flavor selects, each ledger rebuilt from its bound Pods
// where the index does not hold it current with the Pods of mustCharge (by node), and the Node objects by name.
func (r *Reconciler) nodesOf(ctx context.Context, flavor kueue.ResourceFlavorReference, mustCharge map[string][]types.UID) (*flavorNodes, error) {
	rf := &kueue.ResourceFlavor{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: string(flavor)}, rf); err != nil {
		return nil, errors.Wrapf(err, "cannot get ResourceFlavor %s", flavor)
	}
	// Read from the cache without copies, and never changed: a verdict reads every node of the flavor.
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(rf.Spec.NodeLabels)},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list the flavor's nodes")
	}
	sorted := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		sorted[i] = &nodes.Items[i]
	}
	slices.SortFunc(sorted, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	out := &flavorNodes{objects: make(map[string]*corev1.Node, len(sorted)), selects: r.deviceSelector(ctx)}
	for _, n := range sorted {
		e, gen, ok := r.ledgers.lookup(n.Name, mustCharge[n.Name])
		if !ok {
			var err error
			if e, err = r.readLedger(ctx, n.Name, gen); err != nil {
				return nil, err
			}
			r.ledgers.store(n.Name, e)
		}
		if !e.devices {
			continue
		}
		out.cards = append(out.cards, e.cards)
		out.objects[n.Name] = n
	}
	return out, nil
}

// readLedger rebuilds a node's cards from its Devices object, bound Pods and allocated claims in the cache, recording the
// generation the index had for the node before they were read.
func (r *Reconciler) readLedger(ctx context.Context, node string, gen uint64) (ledgerEntry, error) {
	d := &workerv1.Devices{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: node}, d, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return ledgerEntry{gen: gen}, nil
		}
		return ledgerEntry{}, errors.Wrapf(err, "cannot get the Devices of node %s", node)
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{cachepolicy.PodNodeName: node}, client.UnsafeDisableDeepCopy); err != nil {
		return ledgerEntry{}, errors.Wrapf(err, "cannot list the Pods of node %s", node)
	}
	var claims resourceapi.ResourceClaimList
	if r.ResourceClaims {
		if err := r.Client.List(ctx, &claims, client.MatchingFields{cachepolicy.ResourceClaimPools: node}, client.UnsafeDisableDeepCopy); err != nil {
			return ledgerEntry{}, errors.Wrapf(err, "cannot list the ResourceClaims of node %s", node)
		}
	}
	return rebuild(d, pods.Items, claims.Items, gen), nil
}

// passedOn returns the other Workloads on the flavor that passed the check and still hold their quota, oldest
// first; those whose Pods are not bound yet are in flight.
func (r *Reconciler) passedOn(ctx context.Context, self *kueue.Workload, flavor kueue.ResourceFlavorReference) ([]*kueue.Workload, error) {
	// Read without copies, and never changed: a verdict reads every Workload.
	var wls kueue.WorkloadList
	if err := r.Client.List(ctx, &wls, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list Workloads")
	}
	all := r.passed.missing(wls.Items, time.Now())
	for i := range wls.Items {
		all = append(all, &wls.Items[i])
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].CreationTimestamp.Before(&all[j].CreationTimestamp) })
	var out []*kueue.Workload
	for _, wl := range all {
		if wl.UID == self.UID || !reserved(wl) || evicted(wl) {
			continue
		}
		if s := checkState(wl); s == nil || s.State != kueue.CheckStateReady {
			continue
		}
		if f, err := singleFlavor(wl); err != nil || f != flavor {
			continue
		}
		out = append(out, wl)
	}
	return out, nil
}

// podsUnbound reports whether a Workload that passed the check still has Pods to bind, found by what made it:
//   - a Pod (Kueue's Pod integration names it as the Workload's owner): that Pod, not bound yet. A Pod the
//     cache does not hold counts as unbound: it may be one created a moment ago, and counting a Workload whose
//     Pod is gone only holds another back until Kueue marks it finished. A Pod of the same name with another
//     UID is a successor (an Instance stopped and started again makes its Pod anew): the Workload's own Pod is
//     gone, and counting the old Workload through it would hold back the successor's own Workload.
//   - a batch Job: the Job's Pods (labelled with its UID), fewer than the Workload asks or one not bound; the
//     Job makes them only once admitted.
//   - nothing (MultiKueue's copy of a manager's Workload in a member, whose Pod it creates once the copy
//     holds quota): the Pods labelled with the Workload's name as their prebuilt Workload, likewise.
//
// A Workload of another kind is taken as bound, as before: its Pods are found only on the nodes. bound are the
// Workload's Pods found bound and running, which their nodes' cards must count when none is unbound.
func (r *Reconciler) podsUnbound(ctx context.Context, wl *kueue.Workload) (unbound bool, bound []boundPod, err error) {
	if len(wl.OwnerReferences) == 0 {
		return r.anyUnbound(ctx, wl, client.MatchingLabels{kueueconstants.PrebuiltWorkloadLabel: wl.Name})
	}
	for _, o := range wl.OwnerReferences {
		switch {
		case o.Kind == "Job" && o.APIVersion == batchv1.SchemeGroupVersion.String():
			return r.anyUnbound(ctx, wl, client.MatchingLabels{batchv1.ControllerUidLabel: string(o.UID)})
		case o.Kind != "Pod":
			continue
		}
		pod := &corev1.Pod{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: o.Name}, pod, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil, nil
			}
			return false, nil, errors.Wrap(err, "cannot get a Workload's Pod")
		}
		if pod.UID != o.UID {
			return false, nil, nil
		}
		if pod.Spec.NodeName == "" {
			return true, nil, nil
		}
		return false, boundOf(nil, pod), nil
	}
	return false, nil, nil
}

// boundPod is a Pod bound to a node, which the node's cards count.
type boundPod struct {
	node string
	uid  types.UID
}

// boundOf adds the bound Pod to out unless it has finished (its cards are free again).
func boundOf(out []boundPod, p *corev1.Pod) []boundPod {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return out
	}
	return append(out, boundPod{node: p.Spec.NodeName, uid: p.UID})
}

// anyUnbound reports whether fewer of the Workload's Pods (those selected, in its namespace, not finished)
// exist than its pod sets count, or one of them is not bound; and the bound ones.
func (r *Reconciler) anyUnbound(ctx context.Context, wl *kueue.Workload, selector client.MatchingLabels) (bool, []boundPod, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(wl.Namespace), selector, client.UnsafeDisableDeepCopy); err != nil {
		return false, nil, errors.Wrap(err, "cannot list a Workload's Pods")
	}
	var want int32
	for _, ps := range wl.Spec.PodSets {
		want += ps.Count
	}
	var bound []boundPod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Spec.NodeName == "" {
			return true, nil, nil
		}
		bound = boundOf(bound, p)
	}
	return int32(len(bound)) < want, bound, nil
}

// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=instances,verbs=get;list;watch

// instanceOf returns the Instance whose Pod the Workload was made for, nil for a Workload of another Pod.
func (r *Reconciler) instanceOf(ctx context.Context, wl *kueue.Workload) (*workerv1.Instance, error) {
	for _, o := range wl.OwnerReferences {
		if o.Kind != "Pod" {
			continue
		}
		pod := &corev1.Pod{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: o.Name}, pod); err != nil {
			return nil, errors.Wrap(client.IgnoreNotFound(err), "cannot get a Workload's Pod")
		}
		name := pod.Labels[workerv1.LabelInstance]
		if name == "" {
			return nil, nil
		}
		inst := &workerv1.Instance{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: name}, inst); err != nil {
			return nil, errors.Wrap(client.IgnoreNotFound(err), "cannot get the Workload's Instance")
		}
		return inst, nil
	}
	return nil, nil
}

// SetupWithManager registers the check: its AdmissionCheck is created (Kueue's CRDs may come later, so it
// keeps trying for five minutes) and kept Active, and Workloads are judged as they reach it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return r.prepare(ctx) })); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("cardcheck-activation").For(&kueue.AdmissionCheck{}).
		Complete(reconcile.Func(r.keepActive)); err != nil {
		return err
	}
	// The nodes' cards are kept between verdicts and rebuilt on the events of their Pods, claims and inventories.
	watched := []client.Object{&corev1.Pod{}, &workerv1.Devices{}, &corev1.Node{}}
	if r.ResourceClaims {
		watched = append(watched, &resourceapi.ResourceClaim{})
	}
	for _, obj := range watched {
		informer, err := mgr.GetCache().GetInformer(context.Background(), obj)
		if err != nil {
			return errors.Wrapf(err, "cannot watch %T for the nodes' cards", obj)
		}
		if _, err := informer.AddEventHandler(r.ledgers.handler()); err != nil {
			return errors.Wrapf(err, "cannot watch %T for the nodes' cards", obj)
		}
	}
	return ctrl.NewControllerManagedBy(mgr).Named("cardcheck").For(&kueue.Workload{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrentVerdicts}).Complete(r)
}

// prepare creates the AdmissionCheck, retrying while Kueue's CRDs are not there yet.
func (r *Reconciler) prepare(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ac := &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: Name}, Spec: kueue.AdmissionCheckSpec{ControllerName: ControllerName}}
		err := r.Client.Create(ctx, ac)
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if time.Now().After(deadline) {
			// The worker keeps running without the check; queues then do not reference it.
			r.Log.Error(err, "cannot create the node-devices AdmissionCheck; giving up")
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}

// keepActive marks the check Active: it has a controller, this one.
func (r *Reconciler) keepActive(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Name != Name {
		return reconcile.Result{}, nil
	}
	ac := &kueue.AdmissionCheck{}
	if err := r.Client.Get(ctx, req.NamespacedName, ac); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if apimeta.IsStatusConditionTrue(ac.Status.Conditions, kueue.AdmissionCheckActive) {
		return reconcile.Result{}, nil
	}
	apimeta.SetStatusCondition(&ac.Status.Conditions, metav1.Condition{Type: kueue.AdmissionCheckActive,
		Status: metav1.ConditionTrue, Reason: "Active", Message: "judges each Workload card by card", ObservedGeneration: ac.Generation})
	return reconcile.Result{}, errors.Wrap(r.Client.Status().Update(ctx, ac), "cannot mark the AdmissionCheck Active")
}
