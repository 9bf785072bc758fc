package composer

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// ReasonComposeFailed is the Ready condition's reason while a pool cannot be composed or written.
const ReasonComposeFailed = "ComposeFailed"

// ReasonInventoryDisagrees is the event of a node whose labels claim cards its Devices inventory does not list.
const ReasonInventoryDisagrees = "InventoryDisagrees"

// ReasonDraining is the event of an InstanceType whose deletion drains its queue.
const ReasonDraining = "Draining"

// poolReady is an InstanceType's Ready condition for the status its pool was composed with: True while the
// pool is Active; otherwise False, its reason the phase.
func poolReady(st workerv1.InstanceTypeStatus, generation int64) metav1.Condition {
	active := st.Phase == workerv1.InstanceTypeActive
	msg := st.PhaseMessage
	switch {
	case msg != "":
	case active:
		msg = "the pool's ClusterQueue and entrance LocalQueues are composed"
	case st.Phase != "":
		msg = "the pool is " + string(st.Phase)
	default:
		msg = "the pool is Pending"
	}
	return workerv1.ReadyCondition(active, string(st.Phase), msg, generation)
}

// composeFailed is an InstanceType's Ready condition while its pool cannot be composed or written.
func composeFailed(err error, generation int64) metav1.Condition {
	return workerv1.ReadyCondition(false, ReasonComposeFailed, err.Error(), generation)
}

// ConditionKueueConfigured says whether the running Kueue's configuration carries what the pool's queues need
// to admit (the Pod integration, the credit transformations); a stock Kueue's queues never admit an
// accelerated Instance.
const ConditionKueueConfigured = "KueueConfigured"

// Reasons of the KueueConfigured condition, the second also the Warning event when it turns False.
const (
	ReasonKueueConfigured    = "Configured"
	ReasonKueueMisconfigured = "KueueMisconfigured"
)

// kueueConfigured is the KueueConfigured condition for what Kueue's configuration lacks (at most three
// lines named, then how many more).
func kueueConfigured(problems []string, generation int64) metav1.Condition {
	c := metav1.Condition{Type: ConditionKueueConfigured, Status: metav1.ConditionTrue, Reason: ReasonKueueConfigured,
		Message: "Kueue's configuration carries what the pool's queues need", ObservedGeneration: generation}
	if len(problems) == 0 {
		return c
	}
	shown := problems[:min(3, len(problems))]
	c.Status, c.Reason = metav1.ConditionFalse, ReasonKueueMisconfigured
	c.Message = "the queues will not admit: " + strings.Join(shown, "; ")
	if more := len(problems) - len(shown); more > 0 {
		c.Message += fmt.Sprintf(" (and %d more)", more)
	}
	return c
}
