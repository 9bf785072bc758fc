package simulated

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/nvidia"
)

func TestPartitions(t *testing.T) {
	profiles, ok := nvidia.ProductProfiles("NVIDIA H100 80GB HBM3")
	if !ok {
		t.Fatal("no MIG profiles for the H100")
	}
	h100 := providers.Device{Manufacturer: "nvidia", Product: "NVIDIA H100 80GB HBM3", UUID: "GPU-h100", Partitions: profiles}
	type create struct{ profile, owner string }
	type want struct {
		held []string
		err  string
	}
	cases := map[string]struct {
		reason  string
		creates []create
		live    []string
		want    want
	}{
		"Placements": {
			reason:  "Two 3g.40gb take the card's two placements; a third has none left.",
			creates: []create{{"3g.40gb", "a"}, {"3g.40gb", "b"}, {"3g.40gb", "c"}},
			live:    []string{"a", "b", "c"},
			want:    want{held: []string{"3g.40gb", "3g.40gb"}, err: "no free placement for a 3g.40gb partition"},
		},
		"Mixed": {
			reason:  "A 4g.40gb at 0 leaves room for a 3g.40gb at 4 and no more 1g.10gb.",
			creates: []create{{"4g.40gb", "a"}, {"3g.40gb", "b"}, {"1g.10gb", "c"}},
			live:    []string{"a", "b", "c"},
			want:    want{held: []string{"4g.40gb", "3g.40gb"}, err: "no free placement for a 1g.10gb partition"},
		},
		"Reclaim": {
			reason:  "A partition whose owner is gone is destroyed at the next reclaim, and its placement is free again.",
			creates: []create{{"7g.80gb", "gone"}},
			live:    nil,
			want:    want{held: nil},
		},
		"UnknownProfile": {
			reason:  "A profile the card does not have is refused by name.",
			creates: []create{{"9g.99gb", "a"}},
			want:    want{err: "has no partition profile 9g.99gb"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewPartitions()
			var errs []string
			for _, c := range tc.creates {
				if _, err := s.Create(context.Background(), h100, c.profile, c.owner); err != nil {
					errs = append(errs, err.Error())
				}
			}
			live := map[string]bool{}
			for _, o := range tc.live {
				live[o] = true
			}
			s.Reclaim(context.Background(), h100, func(owner string) bool { return live[owner] })
			if diff := cmp.Diff(tc.want.held, s.Held(h100.UUID), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nHeld(...): -want, +got:\n%s", tc.reason, diff)
			}
			got := strings.Join(errs, "; ")
			if (tc.want.err == "") != (got == "") || !strings.Contains(got, tc.want.err) {
				t.Errorf("%s\nCreate(...): error %q, want one containing %q", tc.reason, got, tc.want.err)
			}
		})
	}
}
