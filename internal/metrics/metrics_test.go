package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestInstancePhases(t *testing.T) {
	type step struct {
		key, phase string // an empty phase forgets the Instance
	}
	cases := map[string]struct {
		reason string
		steps  []step
		want   map[string]float64
	}{
		"MovesAndForgets": {
			reason: "An Instance counts in its latest phase only, and not at all once it is gone.",
			steps: []step{{"default/a", "Starting"}, {"default/b", "Starting"}, {"default/a", "Ready"},
				{"default/a", "Ready"}, {"default/b", ""}, {"default/c", ""}},
			want: map[string]float64{"Starting": 0, "Ready": 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			Instances.Reset()
			instancePhases.by = map[string]string{}
			for _, s := range tc.steps {
				if s.phase == "" {
					ForgetInstance(s.key)
					continue
				}
				SetInstancePhase(s.key, s.phase)
			}
			got := map[string]float64{}
			for phase := range tc.want {
				got[phase] = testutil.ToFloat64(Instances.WithLabelValues(phase))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nInstances by phase: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
