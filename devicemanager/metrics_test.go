package devicemanager

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
)

func TestObserveCards(t *testing.T) {
	// cards reads the node's series as a scrape of the agent's registry sees them.
	cards := func(node string) map[string]float64 {
		t.Helper()
		families, err := Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if f.GetName() == "gpustack_device_cards" && labels["node"] == node {
					out[labels["manufacturer"]+"/"+labels["health"]] = m.GetGauge().GetValue()
				}
			}
		}
		return out
	}
	type step struct {
		devices []providers.Device
		want    map[string]float64
	}
	cases := map[string]struct {
		reason string
		steps  []step
	}{
		"TurnsUnhealthy": {
			reason: "A card that turns unhealthy moves from healthy to unhealthy",
			steps: []step{
				{devices: []providers.Device{{Manufacturer: "nvidia"}, {Manufacturer: "nvidia"}},
					want: map[string]float64{"nvidia/healthy": 2, "nvidia/unhealthy": 0}},
				{devices: []providers.Device{{Manufacturer: "nvidia"}, {Manufacturer: "nvidia", Unhealthy: true}},
					want: map[string]float64{"nvidia/healthy": 1, "nvidia/unhealthy": 1}},
			},
		},
		"CardsGone": {
			reason: "Cards that are gone leave no series behind",
			steps: []step{
				{devices: []providers.Device{{Manufacturer: "amd"}}, want: map[string]float64{"amd/healthy": 1, "amd/unhealthy": 0}},
				{want: map[string]float64{}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for i, s := range tc.steps {
				ObserveCards(name, s.devices)
				if diff := cmp.Diff(s.want, cards(name)); diff != "" {
					t.Errorf("%s\nstep %d: ObserveCards(...): -want, +got:\n%s", tc.reason, i, diff)
				}
			}
		})
	}
}
