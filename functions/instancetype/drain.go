package instancetype

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpustack/gpustack-operator/functions/xrs"
)

// A pool that loses its last flavor while its queue still reserves quota is held first (new work waits) and
// drained (HoldAndDrain) only once instance-type-drain-grace-period has passed: nodes whose labels blink (NFD
// restarted, a node re-registering, one bad inventory read) drain nothing, and a pool whose nodes come back
// within the grace runs on as if nothing happened.

// hasFlavor reports whether any flavor of the pool is left.
func hasFlavor(in *xrs.InstanceTypePoolSpec) bool {
	pool := PoolOf(in.Type)
	for _, f := range in.Flavors {
		if pool.Matches(f) {
			return true
		}
	}
	return false
}

// NoFlavorsSince returns when the pool was first seen with no flavor left: the time its status kept, or the
// composition's time for a pool that has just lost its last one; nil while it has one, and nil when the input
// carries no time to measure from.
func NoFlavorsSince(in *xrs.InstanceTypePoolSpec) *metav1.Time {
	switch {
	case hasFlavor(in):
		return nil
	case in.NoFlavorsSince != nil:
		return in.NoFlavorsSince.DeepCopy()
	case in.Now.IsZero():
		return nil
	}
	now := in.Now
	return &now
}

// DrainAt returns when a pool with no flavor left drains what its queue still reserves, and whether it will
// at all: not while it has a flavor, holds nothing, or instance-type-drain-when-no-flavors is off. Without a
// time to measure the grace from it drains at once (the zero time), as the reference does.
func DrainAt(in *xrs.InstanceTypePoolSpec) (time.Time, bool) {
	if !in.Settings.DrainWhenNoFlavors || in.ReservingWorkloads == 0 || hasFlavor(in) {
		return time.Time{}, false
	}
	since := NoFlavorsSince(in)
	if since == nil {
		return time.Time{}, true
	}
	return since.Add(in.Settings.DrainGracePeriod.Duration), true
}

// drainingEmpty reports whether the pool's queue drains (HoldAndDrain) for want of flavors: its grace has
// passed. It returns to no stop policy once nothing is reserved, so a pool whose nodes come back admits again.
func drainingEmpty(in *xrs.InstanceTypePoolSpec) bool {
	at, ok := DrainAt(in)
	return ok && !in.Now.Time.Before(at)
}

// holdingEmpty reports whether the pool's queue is held (Hold) for want of flavors, within its grace.
func holdingEmpty(in *xrs.InstanceTypePoolSpec) bool {
	at, ok := DrainAt(in)
	return ok && in.Now.Time.Before(at)
}

// emptyPlan reports whether the pool's queue is on the empty-plan hold: a new queue starts held (Hold), and
// marked so, until a flavor fills its resource groups, so a type no node serves yet reads Inactive with why
// rather than Active with no room. A queue that has started is not held again when its flavors go.
func emptyPlan(in *xrs.InstanceTypePoolSpec) bool {
	return !in.QueueStarted && !hasFlavor(in)
}
