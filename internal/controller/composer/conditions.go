package composer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// ReasonComposeFailed is the Ready condition's reason while a pool cannot be composed or written.
const ReasonComposeFailed = "ComposeFailed"

// poolReady is an InstanceType's Ready condition for the status its pool was composed with: True while the
// pool is Active; otherwise False, its reason the phase. LastTransitionTime is left for
// meta.SetStatusCondition, which keeps it while the status stays the same.
func poolReady(st workerv1.InstanceTypeStatus, generation int64) metav1.Condition {
	c := metav1.Condition{Type: workerv1.ConditionReady, Status: metav1.ConditionFalse, Reason: string(st.Phase),
		Message: st.PhaseMessage, ObservedGeneration: generation}
	if st.Phase == workerv1.InstanceTypeActive {
		c.Status = metav1.ConditionTrue
	}
	if c.Reason == "" {
		c.Reason = "Pending"
	}
	if c.Message == "" {
		c.Message = "the pool's ClusterQueue and entrance LocalQueues are composed"
		if c.Status == metav1.ConditionFalse {
			c.Message = "the pool is " + c.Reason
		}
	}
	return c
}

// composeFailed is an InstanceType's Ready condition while its pool cannot be composed or written.
func composeFailed(err error, generation int64) metav1.Condition {
	return metav1.Condition{Type: workerv1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonComposeFailed,
		Message: err.Error(), ObservedGeneration: generation}
}
