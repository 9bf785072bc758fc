package instance

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/instancepod"
)

// kueueGate is the scheduling gate Kueue holds a Pod with until its Workload is admitted.
const kueueGate = "kueue.x-k8s.io/admission"

// Phase reads an Instance's phase from its Pod, with a one-line reason while it waits: for quota in its
// queue, for the scheduler (its own words), for its containers to start.
func Phase(pod *corev1.Pod) (workerv1.InstancePhase, string) {
	if pod.DeletionTimestamp != nil {
		return workerv1.InstanceStopping, "the Pod is being deleted"
	}
	switch pod.Status.Phase {
	case corev1.PodFailed:
		return workerv1.InstanceFailed, firstNonEmpty(pod.Status.Message, pod.Status.Reason, "the Pod failed")
	case corev1.PodSucceeded:
		return workerv1.InstanceStopped, "the workload exited"
	}
	if gated(pod) {
		return workerv1.InstanceStarting, WaitMessage(pod, nil)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return workerv1.InstanceStarting, "unschedulable: " + c.Message
		}
	}
	if pod.Status.Phase == corev1.PodRunning && ready(pod) {
		return workerv1.InstanceReady, ""
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
			return workerv1.InstanceStarting, fmt.Sprintf("container %s: %s", cs.Name, firstNonEmpty(w.Message, w.Reason))
		}
	}
	if pod.Spec.NodeName == "" {
		return workerv1.InstanceStarting, "waiting for the scheduler"
	}
	return workerv1.InstanceStarting, "starting on node " + pod.Spec.NodeName
}

func ready(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// gated reports whether Kueue still holds the Pod.
func gated(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == kueueGate {
			return true
		}
	}
	return false
}

// DispatchedPhase reads the phase of a Pod a manager cluster dispatched to a member through MultiKueue: the
// manager's copy stays gated and carries the status of the member's Pod.
func DispatchedPhase(pod *corev1.Pod, cluster string) (workerv1.InstancePhase, string) {
	remote := pod.DeepCopy()
	remote.Spec.SchedulingGates = nil
	if remote.Status.Phase == "" {
		return workerv1.InstanceStarting, fmt.Sprintf("admitted by member cluster %s: waiting for its Pod", cluster)
	}
	for _, c := range remote.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonSchedulingGated {
			return workerv1.InstanceStarting, fmt.Sprintf("member cluster %s: waiting for a card with room there", cluster)
		}
	}
	// The member's node is not copied; its Pod's phase and conditions are.
	remote.Spec.NodeName = "(member cluster " + cluster + ")"
	phase, msg := Phase(remote)
	if msg != "" && phase != workerv1.InstanceReady {
		msg = fmt.Sprintf("member cluster %s: %s", cluster, msg)
	}
	return phase, msg
}

// WaitMessage says what a Pod Kueue holds waits for: quota in its queue (with Kueue's reason), a card with
// room (with the node-devices check's reason) or, on a manager cluster, a member cluster to admit it.
func WaitMessage(pod *corev1.Pod, wl *kueue.Workload) string {
	queue := pod.Labels[workerv1.LabelQueueName]
	if wl != nil {
		for _, s := range wl.Status.AdmissionChecks {
			if strings.HasPrefix(string(s.Name), gatewayv1.MultiKueueCheckPrefix) && s.State != kueue.CheckStateReady {
				return dispatchWait(pod, s)
			}
		}
		// After a Retry Kueue gives the quota back and sets the check Pending again, keeping its message, so
		// the reason stays readable while the Workload waits for its next turn.
		for _, s := range wl.Status.AdmissionChecks {
			if s.State != kueue.CheckStateReady && s.Message != "" {
				return "waiting for a card with room: " + s.Message
			}
		}
		if c := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
			return fmt.Sprintf("waiting for quota in queue %s: %s", queue, c.Message)
		}
	}
	return fmt.Sprintf("waiting for quota in queue %s (kubectl -n %s get workloads)", queue, pod.Namespace)
}

// dispatchWait says what a Pod the manager's MultiKueue check holds waits for: each member's reason, as the
// worker-gateway noted them on the Pod, or else MultiKueue's own words.
func dispatchWait(pod *corev1.Pod, check kueue.AdmissionCheckState) string {
	msg := "waiting for a member cluster to admit it"
	if reasons := pod.Annotations[gatewayv1.AnnotationMemberReasons]; reasons != "" {
		return msg + ": " + reasons
	}
	if check.Message != "" {
		return msg + ": " + check.Message
	}
	return msg
}

// memberAccess is where a dispatched Instance is reached on its member, as the worker-gateway noted it on the
// manager's Pod; none before it did, and none
// from a note this version cannot read, rather than wrong addresses.
func memberAccess(pod *corev1.Pod) instancepod.Access {
	var a instancepod.Access
	if raw := pod.Annotations[gatewayv1.AnnotationMemberAccess]; raw != "" && json.Unmarshal([]byte(raw), &a) != nil {
		return instancepod.Access{}
	}
	return a
}

// ReadyCondition is an Instance's Ready condition for its phase: True once Ready; otherwise False, its reason
// the phase that holds it and its message the phase's.
func ReadyCondition(phase workerv1.InstancePhase, msg string, generation int64) metav1.Condition {
	if phase == workerv1.InstanceReady && msg == "" {
		msg = "the Instance's Pod runs and is ready"
	}
	return workerv1.ReadyCondition(phase == workerv1.InstanceReady, string(phase), msg, generation)
}
