package composer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// ReasonComposeFailed is the Ready condition's reason while a pool cannot be composed or written.
const ReasonComposeFailed = "ComposeFailed"

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
