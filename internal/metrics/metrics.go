// Package metrics holds the worker's own Prometheus metrics, registered on controller-runtime's registry, so
// they are served on the worker's metrics endpoint beside the controllers' own.
package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// The views of an InstanceType, as the label view names them.
const (
	ViewExclusive   = "exclusive"
	ViewShared      = "shared"
	ViewSliced      = "sliced"
	ViewPartitioned = "partitioned"
	ViewCPU         = "cpu"
)

var (
	// PoolCapacity is each InstanceType view's size when nothing is allocated.
	PoolCapacity = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpustack_instancetype_capacity",
		Help: "The size of an InstanceType's view when nothing is allocated (cards, shares, slice units, partitions or cores)."},
		[]string{"instancetype", "view"})
	// PoolRemaining is what each InstanceType view still has free.
	PoolRemaining = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpustack_instancetype_remaining",
		Help: "What an InstanceType's view still has free."}, []string{"instancetype", "view"})
	// PoolOnceMax is the largest single request each InstanceType view can take now.
	PoolOnceMax = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpustack_instancetype_once_max_request",
		Help: "The largest single request an InstanceType's view can take now."}, []string{"instancetype", "view"})
	// ComposeDuration is how long a recompute of the chain takes.
	ComposeDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpustack_compose_duration_seconds",
		Help: "How long a recompute of the chain takes.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)})
	// ComposeObjects counts the objects the composer wrote, by what it did (applied, created, deleted).
	ComposeObjects = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpustack_compose_objects_total",
		Help: "Objects the composer wrote, by operation: applied, created or deleted (pruned)."}, []string{"operation"})
	// AdmissionDecisions counts the per-card check's verdicts by state (Ready, Retry) and reason.
	AdmissionDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpustack_admission_check_decisions_total",
		Help: "Verdicts of the gpustack-node-devices AdmissionCheck, by state and reason."}, []string{"state", "reason"})
	// AdmissionLatency is how long the per-card check takes to judge one Workload.
	AdmissionLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gpustack_admission_check_duration_seconds",
		Help:    "How long the gpustack-node-devices AdmissionCheck takes to judge one Workload.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)})
	// LedgerConflicts counts claims a ledger rebuild could not charge (their cards gone, taken or full).
	LedgerConflicts = prometheus.NewCounter(prometheus.CounterOpts{Name: "gpustack_ledger_conflicts_total",
		Help: "Claims a node's ledger could not charge: their cards gone, taken or full."})
	// Instances counts the Instances in each phase.
	Instances = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpustack_instances",
		Help: "Instances by phase."}, []string{"phase"})
	// ComposeFailures counts the recomputes that ended with an error.
	ComposeFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "gpustack_compose_failures_total",
		Help: "Recomputes of the chain that ended with an error (each is retried)."})
)

// collectors are the worker's own metrics, served with controller-runtime's on its metrics endpoint.
var collectors = []prometheus.Collector{PoolCapacity, PoolRemaining, PoolOnceMax, ComposeDuration, ComposeObjects,
	ComposeFailures, AdmissionDecisions, AdmissionLatency, LedgerConflicts, Instances}

func init() { ctrlmetrics.Registry.MustRegister(collectors...) }

// ObserveInstanceType sets the gauges of one InstanceType from its status; a view the status lacks is removed.
func ObserveInstanceType(name string, st workerv1.InstanceTypeStatus) {
	views := map[string]*workerv1.CapacityView{ViewExclusive: st.Accelerator, ViewShared: st.AcceleratorShared,
		ViewSliced: st.AcceleratorSliced, ViewCPU: st.CPU}
	if st.AcceleratorPartitioned != nil {
		views[ViewPartitioned] = &st.AcceleratorPartitioned.CapacityView
	} else {
		views[ViewPartitioned] = nil
	}
	for view, v := range views {
		if v == nil {
			forgetView(name, view)
			continue
		}
		PoolCapacity.WithLabelValues(name, view).Set(v.Capacity.AsApproximateFloat64())
		PoolRemaining.WithLabelValues(name, view).Set(v.Remaining.AsApproximateFloat64())
		PoolOnceMax.WithLabelValues(name, view).Set(v.OnceMaxRequest.AsApproximateFloat64())
	}
}

// ForgetInstanceType removes the gauges of an InstanceType that is gone.
func ForgetInstanceType(name string) {
	for _, g := range []*prometheus.GaugeVec{PoolCapacity, PoolRemaining, PoolOnceMax} {
		g.DeletePartialMatch(prometheus.Labels{"instancetype": name})
	}
}

func forgetView(name, view string) {
	for _, g := range []*prometheus.GaugeVec{PoolCapacity, PoolRemaining, PoolOnceMax} {
		g.DeleteLabelValues(name, view)
	}
}

// instancePhases is each Instance's last phase, by namespace/name, behind the Instances gauge.
var instancePhases = struct {
	sync.Mutex
	by map[string]string
}{by: map[string]string{}}

// SetInstancePhase records an Instance's phase (key: namespace/name) in the Instances gauge.
func SetInstancePhase(key, phase string) {
	instancePhases.Lock()
	defer instancePhases.Unlock()
	if old, ok := instancePhases.by[key]; ok {
		if old == phase {
			return
		}
		Instances.WithLabelValues(old).Dec()
	}
	instancePhases.by[key] = phase
	Instances.WithLabelValues(phase).Inc()
}

// ForgetInstance removes an Instance that is gone from the Instances gauge.
func ForgetInstance(key string) {
	instancePhases.Lock()
	defer instancePhases.Unlock()
	if old, ok := instancePhases.by[key]; ok {
		Instances.WithLabelValues(old).Dec()
		delete(instancePhases.by, key)
	}
}
