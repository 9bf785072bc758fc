package pools

import (
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// Claim is one container's hold on a node's cards.
type Claim struct {
	// Key names the claim (namespace/pod/container), for messages and the returned placement.
	Key string
	// Manufacturer is the vendor whose cards it asks for.
	Manufacturer string
	// Demand is what it asks.
	Demand Demand
	// Cards are the cards it was placed on before, by ID; empty when it is not placed yet.
	Cards []string
	// ResourceClaim is the ResourceClaim (namespace/name) that holds the cards through DRA; empty for a
	// container's request of a device plugin's resource.
	ResourceClaim string
	// Selectors are the CEL expressions of a DRA request that each card it takes must match (its
	// ResourceClaimTemplate's); none for a device plugin's request.
	Selectors []string
}

// Ledger charges the claims on the node's cards and returns the ledger, where each claim sits (by card ID),
// and the claims it could not charge. Claims placed before are charged first, in order, on their cards; then
// new ones are placed in order by Fit, slices on the fullest card with room, so a new claim never takes a
// card from one that holds it already. A claim that does not fit (its cards gone or taken, or no room left)
// is reported and not charged, so no card ever goes below zero.
func Ledger(d *workerv1.Devices, claims []Claim) (workerv1.DevicesStatus, map[string][]string, []error) {
	type ref struct{ group, card int }
	cards := map[string][]Card{}
	refs := map[string][]ref{}
	for gi, g := range d.Spec.Groups {
		for ai, a := range g.Accelerators {
			cards[g.Manufacturer] = append(cards[g.Manufacturer], ledgerCard(g, a, nil))
			refs[g.Manufacturer] = append(refs[g.Manufacturer], ref{gi, ai})
		}
	}
	ordered := make([]Claim, 0, len(claims))
	for _, c := range claims {
		if len(c.Cards) > 0 {
			ordered = append(ordered, c)
		}
	}
	for _, c := range claims {
		if len(c.Cards) == 0 {
			ordered = append(ordered, c)
		}
	}
	placed := map[string][]string{}
	var problems []error
	for _, c := range ordered {
		all := cards[c.Manufacturer]
		candidates := make([]int, 0, len(all))
		for i, card := range all {
			if len(c.Cards) == 0 || contains(c.Cards, card.ID) {
				candidates = append(candidates, i)
			}
		}
		if len(c.Cards) > 0 && len(candidates) != len(c.Cards) {
			problems = append(problems, errors.Errorf("%s: its cards %v are not all on the node", c.Key, c.Cards))
			continue
		}
		subset := make([]Card, len(candidates))
		for i, ci := range candidates {
			subset[i] = all[ci]
		}
		demand := c.Demand
		if len(c.Cards) > 0 && (demand.Family == FamilyExclusive || demand.Family == FamilyShared) {
			demand.Cards = int64(len(c.Cards))
		}
		chosen, after, err := Fit(subset, demand)
		if err != nil {
			problems = append(problems, errors.Wrapf(err, "%s", c.Key))
			continue
		}
		for i, ci := range candidates {
			all[ci] = after[i]
		}
		for _, i := range chosen {
			placed[c.Key] = append(placed[c.Key], subset[i].ID)
			if c.ResourceClaim != "" {
				card := &all[candidates[i]]
				card.ResourceClaims = append(slices.Clone(card.ResourceClaims), c.ResourceClaim)
			}
		}
	}
	st := workerv1.DevicesStatus{}
	for gi, g := range d.Spec.Groups {
		ga := workerv1.GroupAllocation{ID: g.ID, Manufacturer: g.Manufacturer}
		for ai, a := range g.Accelerators {
			var card Card
			for i, r := range refs[g.Manufacturer] {
				if r == (ref{gi, ai}) {
					card = cards[g.Manufacturer][i]
				}
			}
			entry := workerv1.AcceleratorAllocation{ID: a.ID, Index: a.Index, Mode: card.Mode, Allocated: M - card.Remaining,
				Remaining: card.Remaining, AllocatedSlices: card.AllocatedSlices, ResourceClaims: card.ResourceClaims}
			for _, p := range card.Partitions {
				if p.Allocated > 0 {
					entry.AllocatedProfiles = append(entry.AllocatedProfiles, workerv1.ProfileCount{Name: p.Profile, Count: p.Allocated})
				}
				entry.RemainingProfiles = append(entry.RemainingProfiles, workerv1.ProfileCount{Name: p.Profile, Count: p.Remaining})
			}
			ga.Accelerators = append(ga.Accelerators, entry)
		}
		st.Groups = append(st.Groups, ga)
	}
	return st, placed, problems
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
