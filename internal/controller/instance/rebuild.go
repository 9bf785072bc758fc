package instance

import (
	"context"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/settings"
)

// rebuild deletes a Pod that failed, whatever failed it (its node rebooted or shut down, the kubelet evicted it
// or refused it at admission: an Instance's containers restart in place, so only the node fails a Pod), or that
// is stranded (see stranded), for the Pod to be built again; each rebuild in a row first waits out
// RebuildBackoff, and the Instance says why.
func (r *Reconciler) rebuild(ctx context.Context, inst *workerv1.Instance, values settings.Values, pod *corev1.Pod, why string) (reconcile.Result, error) {
	if inst.Status.LastRebuildTime != nil {
		if wait := inst.Status.LastRebuildTime.Add(RebuildBackoff(inst.Status.Rebuilds)).Sub(r.now()); wait > 0 {
			// Nothing else brings the Instance back when its wait is over.
			return reconcile.Result{RequeueAfter: wait}, r.setStatus(ctx, inst, values, workerv1.InstanceStarting,
				fmt.Sprintf("%s; building it again in %s", why, wait.Round(time.Second)), pod)
		}
	}
	// The Pod's deletion brings the Instance back here, to create it again.
	if err := r.Client.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot delete the Pod to build it again")
	}
	r.Recorder.Eventf(inst, corev1.EventTypeWarning, "PodRebuilt", "%s; building it again", why)
	st := inst.Status.DeepCopy()
	st.Cluster = ""
	st.Rebuilds++
	last := metav1.NewTime(r.now()).Rfc3339Copy()
	st.LastRebuildTime = &last
	return reconcile.Result{}, r.setStatusFrom(ctx, inst, st, values, workerv1.InstanceStarting, why+"; building it again", nil)
}

// RebuildBackoff is how long after the last rebuild the next one in a row waits, once that many rebuilds came
// before it: 10 seconds after the first, doubling up to 5 minutes, so a node that fails every Pod it gets is
// not hammered, and one that failed once is left at once.
func RebuildBackoff(rebuilds int32) time.Duration {
	if rebuilds <= 0 {
		return 0
	}
	const first, most = 10 * time.Second, 5 * time.Minute
	if rebuilds > 6 {
		return most
	}
	return min(first<<(rebuilds-1), most)
}

// mustRebuild returns why the Instance's Pod must be built again ("" when it need not) and, for a Pod that may
// yet turn out stranded, when to look at it again: nothing else wakes the Instance then, as the scheduler's
// condition stays as it is.
func (r *Reconciler) mustRebuild(ctx context.Context, inst *workerv1.Instance, pod *corev1.Pod) (string, time.Duration, error) {
	if pod == nil || inst.Spec.Stop || pod.DeletionTimestamp != nil {
		return "", 0, nil
	}
	if pod.Status.Phase == corev1.PodFailed {
		return "the Pod failed (" + firstNonEmpty(pod.Status.Reason, "Failed") + ": " + firstNonEmpty(pod.Status.Message, "the Pod failed") + ")", 0, nil
	}
	return r.stranded(ctx, pod)
}

// StrandedGrace is how long an admitted Pod may wait unschedulable, with a placement no node matches, before it
// is built again: a node's labels that blink (NFD writing them again) are back well within it. It is also how
// often an admitted Pod that waits for the scheduler is looked at again: node labels wake no Instance.
const StrandedGrace = 30 * time.Second

// stranded returns why an admitted Pod can never be scheduled as it stands ("" when it can, or may yet) and,
// while it waits for the scheduler, when to look at it again. Kueue admitted the Pod to a flavor and the
// per-card check pinned it to a node, both by node labels; when those labels change after admission (a node's
// CPU identity or management flag moved, or the node went), no node matches the Pod's selector and nothing
// would ever schedule it. Built again, it queues anew and is admitted to the flavors of the nodes as they are
// now. A Pod that waits for room or for a taint to go is not stranded: some node matches its selector.
func (r *Reconciler) stranded(ctx context.Context, pod *corev1.Pod) (string, time.Duration, error) {
	if gated(pod) || pod.Spec.NodeName != "" || pod.Status.Phase != corev1.PodPending || !unschedulable(pod) {
		r.noMatchSince.Delete(pod.UID)
		return "", 0, nil
	}
	// The selector narrows the list in the cache, so a waiting Pod does not copy every node every grace.
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.MatchingLabels(pod.Spec.NodeSelector)); err != nil {
		return "", 0, errors.Wrap(err, "cannot list nodes")
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	for i := range nodes.Items {
		// A term that cannot be parsed matches no node, as the scheduler reads it.
		if ok, _ := affinity.Match(&nodes.Items[i]); ok {
			r.noMatchSince.Delete(pod.UID)
			return "", StrandedGrace, nil
		}
	}
	now := r.now()
	since, _ := r.noMatchSince.LoadOrStore(pod.UID, now)
	if wait := since.(time.Time).Add(StrandedGrace).Sub(now); wait > 0 {
		return "", wait, nil
	}
	r.noMatchSince.Delete(pod.UID)
	return "the Pod cannot be scheduled: its node selector matches no node (the node labels it was admitted by changed)", 0, nil
}

// unschedulable reports whether the scheduler found no node for the Pod.
func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}
