package embedded_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/internal/embedded"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// pool is what a case checks of the function's answer.
type pool struct {
	// Quotas are the ClusterQueue's nominal quotas, flavor=resource:quantity.
	Quotas         []string
	AdmissionCheck bool
	StopPolicy     string
	// Migration is the queue's drain bookkeeping, phase/stop policy; "" when it has none.
	Migration string
	// EmptyPlanHold is whether the queue carries the empty-plan hold's marker.
	EmptyPlanHold bool
	LocalQueues   []string
	Phase         workerv1.InstanceTypePhase
	Summary       workerv1.InstanceTypeSummary
	// NoFlavorsSince is the status's noFlavorsSince, RFC 3339; "" when unset.
	NoFlavorsSince string
	Err            string
}

// a10gQuotas are the A10G queue's quotas: one card of credits, and cpu without a bound (Kueue's default
// quotaCheckStrategy, BlockUndeclared, refuses what a queue does not cover).
var a10gQuotas = []string{"gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d=credits.gpustack.ai/nvidia:1600k",
	"gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d=cpu:1M"}

func TestInstanceTypePipeline(t *testing.T) {
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := simulated.Nodes(context.Background(), inv)
	if err != nil {
		t.Fatal(err)
	}
	_, chain, err := embedded.Flavors(context.Background(), xrs.Inventory(nodes, xrs.DefaultFunctionSettings()))
	if err != nil {
		t.Fatal(err)
	}
	spec := func(it *workerv1.InstanceType, mutate ...func(*xrs.InstanceTypePoolSpec)) xrs.InstanceTypePoolSpec {
		s := xrs.InstanceTypePoolSpec{Name: it.Name, Type: it.Spec, Flavors: chain.Flavors, Nodes: pools.Classify(nodes),
			Namespaces: []string{"team-b", "default"}, Settings: xrs.DefaultFunctionSettings()}
		for _, m := range mutate {
			m(&s)
		}
		return s
	}
	a10g := builders.MakeInstanceType("gpustack--nvidia-a10g-linux-amd64").Accelerated("nvidia-a10g").Unit("8", "64Gi").Obj()
	generic := builders.MakeInstanceType("gpustack--generic-linux-amd64").Obj()
	// h100 is a type no node of the walkthrough serves: a pool with no flavor.
	h100 := builders.MakeInstanceType("h100").Accelerated("nvidia-h100").Unit("12", "192Gi").Obj()
	lostAt := metav1.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	authored := builders.MakeInstanceType("a10g-12c128g").Accelerated("nvidia-a10g").Unit("12", "128Gi").LocalStorage("200Gi").Obj()
	lqs := func(name string) []string {
		return []string{"default/" + pools.EntranceName(name), "team-b/" + pools.EntranceName(name)}
	}
	cases := map[string]struct {
		reason string
		in     xrs.InstanceTypePoolSpec
		want   pool
	}{
		"A10G": {
			reason: "The derived A10G pool: 1600k credits on its one flavor, entrances in both namespaces, Step 1's row.",
			in:     spec(a10g),
			want: pool{
				Quotas:      a10gQuotas,
				LocalQueues: lqs(a10g.Name), Phase: workerv1.InstanceTypeActive,
				Summary: workerv1.InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
			},
		},
		"Generic": {
			reason: "The generic CPU pool covers cpu on four CPU flavors, 72 cores in all.",
			in:     spec(generic),
			want: pool{
				Quotas: []string{"gpustack--amd-epyc-7r13-linux-amd64-16c=cpu:16", "gpustack--amd-epyc-7r32-linux-amd64-4c=cpu:4",
					"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c=cpu:48", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c=cpu:4"},
				LocalQueues: lqs(generic.Name), Phase: workerv1.InstanceTypeActive,
				Summary: workerv1.InstanceTypeSummary{Unit: "1/2Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "48/72"},
			},
		},
		"Authored": {
			reason: "An authored type is a sibling pool on the same card, with its own unit and entrance.",
			in:     spec(authored),
			want: pool{
				Quotas:      a10gQuotas,
				LocalQueues: lqs(authored.Name), Phase: workerv1.InstanceTypeActive,
				Summary: workerv1.InstanceTypeSummary{Unit: "12/128Gi/200Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
			},
		},
		"CheckActive": {
			reason: "The node-devices check is referenced once it is Active.",
			in:     spec(a10g, func(s *xrs.InstanceTypePoolSpec) { s.Settings.NodeDevicesCheckActive = true }),
			want: pool{
				Quotas:         a10gQuotas,
				AdmissionCheck: true, LocalQueues: lqs(a10g.Name), Phase: workerv1.InstanceTypeActive,
				Summary: workerv1.InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
			},
		},
		"CheckNotDerived": {
			reason: "The check is referenced only while derivation is on.",
			in: spec(a10g, func(s *xrs.InstanceTypePoolSpec) {
				s.Settings.NodeDevicesCheckActive, s.Settings.DerivedFromNode = true, false
			}),
			want: pool{
				Quotas:      a10gQuotas,
				LocalQueues: lqs(a10g.Name), Phase: workerv1.InstanceTypeActive,
				Summary: workerv1.InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
			},
		},
		"Inactive": {
			reason: "spec.inactive holds the queue.",
			in:     spec(a10g, func(s *xrs.InstanceTypePoolSpec) { s.Type.Inactive = true }),
			want: pool{
				Quotas:     a10gQuotas,
				StopPolicy: "Hold", LocalQueues: lqs(a10g.Name), Phase: workerv1.InstanceTypeInactive,
				Summary: workerv1.InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
			},
		},
		"Deleting": {
			reason: "A type being deleted drains its queue: Draining while the queue reserves quota for a Workload.",
			in:     spec(a10g, func(s *xrs.InstanceTypePoolSpec) { s.Deleting, s.ReservingWorkloads = true, 1 }),
			want: pool{
				Quotas:     a10gQuotas,
				StopPolicy: "HoldAndDrain", LocalQueues: lqs(a10g.Name), Phase: workerv1.InstanceTypeDraining,
				Summary: workerv1.InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
			},
		},
		"Drained": {
			reason: "A type being deleted whose queue reserves nothing more is Inactive, still on HoldAndDrain, until the queue goes.",
			in:     spec(a10g, func(s *xrs.InstanceTypePoolSpec) { s.Deleting = true }),
			want: pool{
				Quotas:     a10gQuotas,
				StopPolicy: "HoldAndDrain", LocalQueues: lqs(a10g.Name), Phase: workerv1.InstanceTypeInactive,
				Summary: workerv1.InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
			},
		},
		"NoFlavorsDraining": {
			reason: "A pool that lost its last flavor while its queue still reserves quota drains it (instance-type-drain-when-no-flavors) at once when the input has no time to measure a grace from (a composite rendered by hand).",
			in: spec(builders.MakeInstanceType("h100").Accelerated("nvidia-h100").Unit("12", "192Gi").Obj(),
				func(s *xrs.InstanceTypePoolSpec) { s.Namespaces, s.ReservingWorkloads = nil, 2 }),
			want: pool{StopPolicy: "HoldAndDrain", Migration: "Draining/HoldAndDrain", Phase: workerv1.InstanceTypeDraining,
				Summary: workerv1.InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "0/0"}},
		},
		"NoFlavorsHeld": {
			reason: "A pool that has just lost its last flavor while its queue reserves quota is held, not drained: new work waits for the grace period.",
			in: spec(h100, func(s *xrs.InstanceTypePoolSpec) {
				s.Namespaces, s.ReservingWorkloads, s.Now = nil, 2, lostAt
			}),
			want: pool{StopPolicy: "Hold", Migration: "Holding/Hold", Phase: workerv1.InstanceTypeInactive, NoFlavorsSince: "2026-12-01T10:00:00Z",
				Summary: workerv1.InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "0/0"}},
		},
		"NoFlavorsWithinGrace": {
			reason: "A second before its grace (5m by default) ends, the pool is still only held, since the time its status kept.",
			in: spec(h100, func(s *xrs.InstanceTypePoolSpec) {
				s.Namespaces, s.ReservingWorkloads, s.NoFlavorsSince, s.Now = nil, 2, &lostAt, metav1.NewTime(lostAt.Add(5*time.Minute-time.Second))
			}),
			want: pool{StopPolicy: "Hold", Migration: "Holding/Hold", Phase: workerv1.InstanceTypeInactive, NoFlavorsSince: "2026-12-01T10:00:00Z",
				Summary: workerv1.InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "0/0"}},
		},
		"NoFlavorsGraceOver": {
			reason: "Once the grace has passed with no flavor back, the queue drains what it reserves.",
			in: spec(h100, func(s *xrs.InstanceTypePoolSpec) {
				s.Namespaces, s.ReservingWorkloads, s.NoFlavorsSince, s.Now = nil, 2, &lostAt, metav1.NewTime(lostAt.Add(5*time.Minute))
			}),
			want: pool{StopPolicy: "HoldAndDrain", Migration: "Draining/HoldAndDrain", Phase: workerv1.InstanceTypeDraining, NoFlavorsSince: "2026-12-01T10:00:00Z",
				Summary: workerv1.InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "0/0"}},
		},
		"NoFlavorsGraceSetting": {
			reason: "instance-type-drain-grace-period names the grace: at 0 a pool drains as soon as its flavors go.",
			in: spec(h100, func(s *xrs.InstanceTypePoolSpec) {
				s.Namespaces, s.ReservingWorkloads, s.Now, s.Settings.DrainGracePeriod = nil, 2, lostAt, metav1.Duration{}
			}),
			want: pool{StopPolicy: "HoldAndDrain", Migration: "Draining/HoldAndDrain", Phase: workerv1.InstanceTypeDraining, NoFlavorsSince: "2026-12-01T10:00:00Z",
				Summary: workerv1.InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "0/0"}},
		},
		"FlavorsBack": {
			reason: "A pool whose flavors come back within the grace runs on: no stop policy, and noFlavorsSince clears.",
			in: spec(a10g, func(s *xrs.InstanceTypePoolSpec) {
				s.ReservingWorkloads, s.NoFlavorsSince, s.Now = 1, &lostAt, metav1.NewTime(lostAt.Add(time.Minute))
			}),
			want: pool{
				Quotas:      a10gQuotas,
				LocalQueues: lqs(a10g.Name), Phase: workerv1.InstanceTypeActive,
				Summary: workerv1.InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
			},
		},
		"NoFlavorsNoDrain": {
			reason: "With instance-type-drain-when-no-flavors off, a pool without flavors only empties its groups.",
			in: spec(builders.MakeInstanceType("h100").Accelerated("nvidia-h100").Unit("12", "192Gi").Obj(),
				func(s *xrs.InstanceTypePoolSpec) {
					s.Namespaces, s.ReservingWorkloads, s.Settings.DrainWhenNoFlavors, s.QueueStarted = nil, 2, false, true
				}),
			want: pool{Phase: workerv1.InstanceTypeActive,
				Summary: workerv1.InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "0/0"}},
		},
		"ReservingWithFlavors": {
			reason: "Reservations alone drain nothing while the pool has flavors.",
			in:     spec(a10g, func(s *xrs.InstanceTypePoolSpec) { s.ReservingWorkloads = 1 }),
			want: pool{
				Quotas:      a10gQuotas,
				LocalQueues: lqs(a10g.Name), Phase: workerv1.InstanceTypeActive,
				Summary: workerv1.InstanceTypeSummary{Unit: "8/64Gi/100Gi", Accelerator: "1/1 1/10 100/100 0/0", CPU: "0/0"},
			},
		},
		"NoFlavors": {
			reason: "A new type no flavor matches gets a queue with no resource groups, held with the empty-plan marker until one does, and empty views.",
			in: spec(builders.MakeInstanceType("h100").Accelerated("nvidia-h100").Unit("12", "192Gi").Obj(),
				func(s *xrs.InstanceTypePoolSpec) { s.Namespaces = nil }),
			want: pool{StopPolicy: "Hold", EmptyPlanHold: true, Phase: workerv1.InstanceTypeInactive,
				Summary: workerv1.InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "0/0"}},
		},
		"NoFlavorsStarted": {
			reason: "A queue that has started and lost its flavors, reserving nothing, is Active with no resource groups (the walkthrough's A10G pool): not held again.",
			in: spec(builders.MakeInstanceType("h100").Accelerated("nvidia-h100").Unit("12", "192Gi").Obj(),
				func(s *xrs.InstanceTypePoolSpec) { s.Namespaces, s.QueueStarted = nil, true }),
			want: pool{Phase: workerv1.InstanceTypeActive,
				Summary: workerv1.InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "0/0"}},
		},
		"NoFlavorsInactive": {
			reason: "An administrator's Hold on a pool with no flavors is the administrator's: no empty-plan marker.",
			in: spec(builders.MakeInstanceType("h100").Accelerated("nvidia-h100").Unit("12", "192Gi").Inactive().Obj(),
				func(s *xrs.InstanceTypePoolSpec) { s.Namespaces = nil }),
			want: pool{StopPolicy: "Hold", Phase: workerv1.InstanceTypeInactive,
				Summary: workerv1.InstanceTypeSummary{Unit: "12/192Gi/100Gi", Accelerator: "0/0 0/0 0/0 0/0", CPU: "0/0"}},
		},
		"UnknownManufacturer": {
			reason: "An accelerator group of no known manufacturer is refused, naming the field.",
			in:     spec(builders.MakeInstanceType("acme").Accelerated("acme-x1").Obj()),
			want:   pool{Err: `InstanceType acme: spec.acceleratorGroup "acme-x1" names no known manufacturer`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, status, err := embedded.InstanceType(context.Background(), tc.in)
			got := pool{}
			if err != nil {
				got.Err = err.Error()
			}
			for _, o := range out.Objects {
				switch o.GetKind() {
				case "ClusterQueue":
					cq := &kueuev1beta2.ClusterQueue{}
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cq); err != nil {
						t.Fatal(err)
					}
					if cq.Spec.CohortName != "" {
						t.Errorf("the queue of %s is in cohort %q; pools are isolated", tc.in.Name, cq.Spec.CohortName)
					}
					for _, rg := range cq.Spec.ResourceGroups {
						for _, f := range rg.Flavors {
							for _, r := range f.Resources {
								got.Quotas = append(got.Quotas, string(f.Name)+"="+string(r.Name)+":"+r.NominalQuota.String())
							}
						}
					}
					got.AdmissionCheck = cq.Spec.AdmissionChecksStrategy != nil
					if cq.Spec.StopPolicy != nil {
						got.StopPolicy = string(*cq.Spec.StopPolicy)
					}
					got.EmptyPlanHold = cq.Annotations[workerv1.AnnotationEmptyPlanHold] == "true"
					if phase := cq.Annotations[workerv1.AnnotationMigrationPhase]; phase != "" {
						got.Migration = phase + "/" + cq.Annotations[workerv1.AnnotationMigrationStopPolicy]
					}
				case "LocalQueue":
					got.LocalQueues = append(got.LocalQueues, o.GetNamespace()+"/"+o.GetName())
				}
			}
			if err == nil {
				got.Phase, got.Summary = status.Phase, status.Summary
			}
			if status.NoFlavorsSince != nil {
				got.NoFlavorsSince = status.NoFlavorsSince.UTC().Format(time.RFC3339)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nembedded.InstanceType(...): -want, +got:\n%s", tc.reason, diff)
			}
			if err == nil && !strings.HasPrefix(status.Entrance, "gpustack-fnv64-") {
				t.Errorf("%s\nstatus.entrance = %q", tc.reason, status.Entrance)
			}
		})
	}
}
