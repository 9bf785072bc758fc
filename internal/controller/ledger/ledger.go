// Package ledger keeps each node's Devices ledger: it is rebuilt from the Pods bound to the node whenever one
// of them comes, goes or finishes, so a restart loses nothing, and each new claim is placed on concrete cards
// that are recorded on its Pod.
package ledger

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/envvar"
	"github.com/gpustack/gpustack-operator/internal/cachepolicy"
	"github.com/gpustack/gpustack-operator/internal/metrics"
	"github.com/gpustack/gpustack-operator/pools"
)

// Reconciler rebuilds one node's ledger.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// ReleaseTerminated stops charging finished Pods (EnvReleaseTerminated, default true).
	ReleaseTerminated bool
	// ResourceClaims charges the ResourceClaims this project's DRA drivers allocated cards to, as well as the
	// Pods' containers: where the cluster serves resource.k8s.io/v1. Their claims are listed through the index
	// cachepolicy.IndexResourceClaimsByPool.
	ResourceClaims bool

	recorded recordedMemo
}

// EnvReleaseTerminated names the variable that says whether finished Pods stop holding their cards.
const EnvReleaseTerminated = "GPUSTACK_LEDGER_RELEASE_TERMINATED_PODS"

// ReleaseTerminatedFromEnv reads EnvReleaseTerminated through getenv: true (the default) frees a finished Pod's
// cards, false keeps them charged until the Pod is deleted. A value that is not a boolean is an error naming
// the variable.
func ReleaseTerminatedFromEnv(getenv func(string) string) (bool, error) {
	return envvar.Bool(getenv, EnvReleaseTerminated, true)
}

// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=devices,verbs=get;list;watch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=devices/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch

// Reconcile charges the node's Pods on its cards, records where new claims landed, and writes the ledger when
// it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	d := &workerv1.Devices{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: req.Name}, d); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{cachepolicy.PodNodeName: req.Name}); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot list the node's Pods")
	}
	r.recorded.overlay(pods.Items, time.Now())
	held := make([]corev1.Pod, 0, len(pods.Items))
	for _, p := range pods.Items {
		done := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if !done || !r.ReleaseTerminated {
			held = append(held, p)
		}
	}
	// Oldest first: a claim placed earlier keeps its cards, whatever came after.
	sort.Slice(held, func(i, j int) bool { return olderFirst(&held[i], &held[j]) })
	var claims []pools.Claim
	for i := range held {
		claims = append(claims, pools.PodClaims(&held[i])...)
	}
	if r.ResourceClaims {
		var rcs resourceapi.ResourceClaimList
		if err := r.Client.List(ctx, &rcs, client.MatchingFields{cachepolicy.ResourceClaimPools: req.Name}); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot list the ResourceClaims allocated on the node")
		}
		sort.Slice(rcs.Items, func(i, j int) bool { return olderFirst(&rcs.Items[i], &rcs.Items[j]) })
		for i := range rcs.Items {
			claims = append(claims, pools.ResourceClaimClaims(&rcs.Items[i], d)...)
		}
	}
	ledger, placed, problems := pools.Ledger(d, claims)
	for _, p := range problems {
		metrics.LedgerConflicts.Inc()
		r.Recorder.Event(d, corev1.EventTypeWarning, "LedgerConflict", p.Error())
	}
	var errs []error
	for i := range held {
		errs = append(errs, r.record(ctx, &held[i], claims, placed))
	}
	if !apiequality.Semantic.DeepEqual(d.Status, ledger) {
		d.Status = ledger
		errs = append(errs, errors.Wrap(r.Client.Status().Update(ctx, d), "cannot update the ledger"))
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// olderFirst orders objects by creation, then by namespace and name.
func olderFirst(a, b client.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()
}

// record writes the cards of the Pod's newly placed containers onto the Pod.
func (r *Reconciler) record(ctx context.Context, pod *corev1.Pod, claims []pools.Claim, placed map[string][]string) error {
	recorded := map[string][]string{}
	_ = json.Unmarshal([]byte(pod.Annotations[workerv1.AnnotationAllocated]), &recorded)
	changed := false
	prefix := pod.Namespace + "/" + pod.Name + "/"
	for _, c := range claims {
		container, ok := strings.CutPrefix(c.Key, prefix)
		if !ok || len(c.Cards) > 0 || len(placed[c.Key]) == 0 {
			continue
		}
		recorded[container], changed = placed[c.Key], true
	}
	if !changed {
		return nil
	}
	value, err := json.Marshal(recorded)
	if err != nil {
		return err
	}
	// Optimistic lock: a Pod seen from a stale cache, without cards recorded a moment ago, must not have
	// them overwritten; the conflict brings a fresh look.
	orig := pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[workerv1.AnnotationAllocated] = string(value)
	if err := r.Client.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return errors.Wrapf(client.IgnoreNotFound(err), "cannot record the cards of Pod %s/%s", pod.Namespace, pod.Name)
	}
	r.recorded.remember(pod.UID, string(value), time.Now())
	return nil
}

// SetupWithManager registers the reconciler: a node's ledger is rebuilt when its Devices object, any Pod
// bound to it, or (with ResourceClaims) any claim allocated from its pool changes. A claim's update is mapped
// through its old state too, so a claim deallocated frees its node's cards.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).Named("ledger").For(&workerv1.Devices{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: n}}}
			}
			return nil
		}))
	if r.ResourceClaims {
		b = b.Watches(&resourceapi.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			var out []reconcile.Request
			for _, n := range cachepolicy.ResourceClaimPoolsOf(o.(*resourceapi.ResourceClaim)) {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
			}
			return out
		}))
	}
	return b.Complete(r)
}
