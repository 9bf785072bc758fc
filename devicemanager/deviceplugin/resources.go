// Package deviceplugin is the kubelet device plugin of the device manager (deviceplugin v1beta1 over unix
// sockets): for each vendor it serves the whole-card resource, the shared and sliced pools, and the SSH
// sidecar's visibility pool, and on Allocate hands a container its cards with the vendor's visibility
// variables and, for a slice, the soft-slicing runtime's limits.
package deviceplugin

import (
	"fmt"
	"strings"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Kind is the way a resource hands out cards.
type Kind string

// The kinds of resources the plugin serves.
const (
	// Whole hands out whole cards, one token per card.
	Whole Kind = "whole"
	// Shared hands out shares, SharesPerCard tokens per card; N tokens must sit on N distinct cards.
	Shared Kind = "shared"
	// Sliced hands out one soft slice, one token per slice slot of a card.
	Sliced Kind = "sliced"
	// Visibility lets the SSH sidecar see its Pod's cards without being charged for them.
	Visibility Kind = "visibility"
	// Partitioned hands out hardware partitions (MIG) of cards in a partitioning mode, as many tokens per card
	// as it holds plus the most it can still make (the most an empty card holds before the ledger is read);
	// the profile is the Pod's per-profile counting key.
	Partitioned Kind = "partitioned"
)

// SharesPerCard is the number of shares one card gives: a share costs a tenth of the card's credits.
const SharesPerCard = int(pools.M / (pools.M / 10))

// Resource is one extended resource the plugin serves.
type Resource struct {
	// Name is the resource (nvidia.com/gpu.shared).
	Name string
	// Kind is how it hands out cards.
	Kind Kind
	// Vendor is the manufacturer whose cards it hands out.
	Vendor vendors.Vendor
}

// Resources returns a vendor's resources: the whole-card resource, its .shared pool, its .sliced pool when the
// vendor can soft-slice, its .partitioned pool when it has a partitioning kind, and
// device.gpustack.ai/<mfr>.visibility.
func Resources(v vendors.Vendor) []Resource {
	out := []Resource{{Name: v.ResourceName, Kind: Whole, Vendor: v}, {Name: v.ResourceName + ".shared", Kind: Shared, Vendor: v}}
	if v.SlicesPerCard > 0 {
		out = append(out, Resource{Name: v.ResourceName + ".sliced", Kind: Sliced, Vendor: v})
	}
	if v.PartitionKind != "" {
		out = append(out, Resource{Name: v.ResourceName + ".partitioned", Kind: Partitioned, Vendor: v})
	}
	return append(out, Resource{Name: "device.gpustack.ai/" + v.Key + ".visibility", Kind: Visibility, Vendor: v})
}

// PerCard is the number of tokens the resource lists for one card: a card in a partitioning mode offers only
// partitions (the most its profiles allow at once), any other card everything but partitions.
func (r Resource) PerCard(c providers.Device) int {
	if len(c.Partitions) > 0 {
		if r.Kind != Partitioned && r.Kind != Visibility {
			return 0
		}
		var most int32
		for _, p := range c.Partitions {
			most = max(most, p.Count)
		}
		return int(most)
	}
	switch r.Kind {
	case Whole:
		return 1
	case Shared:
		return SharesPerCard
	case Sliced:
		return int(r.Vendor.SlicesPerCard)
	case Visibility:
		// One per Pod that can hold the card at once: a share or a slice each.
		return max(int(r.Vendor.SlicesPerCard), SharesPerCard)
	}
	return 0
}

// tokenSeparator joins a card ID and the token's number; card IDs (UUIDs, die IDs, PCI addresses) never hold it.
const tokenSeparator = "::"

// Tokens returns the devices the resource lists to the kubelet for the given cards, PerCard of each; an
// unhealthy card's tokens are listed unhealthy.
func Tokens(r Resource, cards []providers.Device) []*pluginapi.Device {
	return LedgerTokens(r, cards, nil)
}

// LedgerTokens is Tokens once the ledger is known: a partitioned card then offers its partitions held plus the
// most of one profile it can still make (pools.PartitionTokens), so the node's pool key follows what is left;
// a card allocated to a ResourceClaim through DRA is listed unhealthy, so the kubelet grants it to no container
// and the node's allocatable leaves it out.
func LedgerTokens(r Resource, cards []providers.Device, ledger map[string]pools.Card) []*pluginapi.Device {
	var out []*pluginapi.Device
	for _, c := range cards {
		if c.Manufacturer != r.Vendor.Key || r.PerCard(c) == 0 {
			continue
		}
		n := r.PerCard(c)
		entry, known := ledger[c.UUID]
		if known && r.Kind == Partitioned && entry.Partitioned() {
			n = int(pools.PartitionTokens(entry))
		}
		health := pluginapi.Healthy
		if c.Unhealthy || len(entry.ResourceClaims) > 0 {
			health = pluginapi.Unhealthy
		}
		if r.Kind == Whole {
			out = append(out, &pluginapi.Device{ID: c.UUID, Health: health})
			continue
		}
		for i := range n {
			out = append(out, &pluginapi.Device{ID: fmt.Sprintf("%s%s%s-%d", c.UUID, tokenSeparator, r.Kind, i), Health: health})
		}
	}
	return out
}

// CardOf returns the card ID a token belongs to.
func CardOf(token string) string {
	card, _, _ := strings.Cut(token, tokenSeparator)
	return card
}
