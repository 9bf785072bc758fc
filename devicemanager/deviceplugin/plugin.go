package deviceplugin

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
)

// PendingSource tells about the container an allocation is for: its slice budget, its partition profile, and
// the cards the ledger recorded for it. The kubelet's calls name only devices, so all are read from the Pod
// the allocation belongs to.
type PendingSource interface {
	Budget(ctx context.Context, r Resource, card providers.Device) (Budget, error)
	Profile(ctx context.Context, r Resource) (profile, owner string, err error)
	Cards(ctx context.Context, r Resource) []string
}

// Partitioner creates hardware partitions on a node's cards: NVIDIA's MIG through NVML on a real node.
type Partitioner interface {
	// Create makes one partition of the profile on the card for owner (the Pod's UID), or takes one that
	// exists and nobody holds, and returns the device name the vendor's visibility variable takes.
	Create(ctx context.Context, card providers.Device, profile, owner string) (string, error)
	// Reclaim destroys the card's partitions whose owner is no longer live, and those nobody holds.
	Reclaim(ctx context.Context, card providers.Device, live func(owner string) bool) []error
}

// Plugin serves one resource to the kubelet.
type Plugin struct {
	pluginapi.UnimplementedDevicePluginServer

	// Resource is what it serves.
	Resource Resource
	// Cards returns the node's cards as last detected.
	Cards func() []providers.Device
	// Ledger returns the node's ledger by card ID; nil or an error means every card counts as free.
	Ledger func(ctx context.Context) (map[string]pools.Card, error)
	// Pending tells a slice's budget (required for a sliced resource) and the cards the ledger recorded.
	Pending PendingSource
	// Runtime says where the soft-slicing libraries are staged.
	Runtime Runtime
	// Reservations are the cards recently handed to the vendor's other resources, which the visibility
	// resource hands on to the SSH sidecar; shared by the vendor's plugins.
	Reservations *Reservations
	// Partitioner creates the partitions a partitioned resource hands out; without one, it refuses them.
	Partitioner Partitioner
	// NoSlicedAllocateGate hands out a slice without checking its card's room on the ledger first
	// (GPUSTACK_DEVICE_PLUGIN_SLICED_ALLOCATE_GATE=false): the per-card admission check alone guards the cards.
	NoSlicedAllocateGate bool

	changes
}

// changes wakes the kubelet's ListAndWatch streams of a plugin when what it offers changed.
type changes struct {
	mu      sync.Mutex
	changed chan struct{}
}

// Changed tells the kubelet's ListAndWatch streams that what the plugin offers changed.
func (c *changes) Changed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// waitChange returns a channel closed at the next change.
func (c *changes) waitChange() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

// GetDevicePluginOptions asks the kubelet for preferred-allocation calls.
func (p *Plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}, nil
}

// ListAndWatch sends the resource's tokens, and again whenever the cards or what the ledger says of them
// (partitions left, cards DRA holds) change.
func (p *Plugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	for {
		changed := p.waitChange()
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.tokens(stream.Context())}); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-changed:
		}
	}
}

// tokens are the devices to list, as the ledger says when it can be read (partitions left, cards DRA holds).
func (p *Plugin) tokens(ctx context.Context) []*pluginapi.Device {
	if p.Ledger == nil {
		return Tokens(p.Resource, p.Cards())
	}
	ledger, err := p.Ledger(ctx)
	if err != nil {
		ledger = nil
	}
	return LedgerTokens(p.Resource, p.Cards(), ledger)
}

// GetPreferredAllocation steers the kubelet to the cards the ledger says fit: whole cards on free cards,
// shares and slices onto the fullest card that still has room, as the node-devices admission check judged.
// When no placement fits it prefers nothing and leaves the choice to the kubelet.
func (p *Plugin) GetPreferredAllocation(ctx context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, creq := range req.ContainerRequests {
		ids := p.prefer(ctx, creq.AvailableDeviceIDs, creq.MustIncludeDeviceIDs, int(creq.AllocationSize))
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

func (p *Plugin) prefer(ctx context.Context, available, mustInclude []string, size int) []string {
	if len(mustInclude) > 0 || size <= 0 {
		return nil
	}
	if p.Resource.Kind == Visibility {
		var ids []string
		for _, c := range p.Reservations.peek(size) {
			ids = append(ids, c.UUID)
		}
		return tokensOn(available, ids)
	}
	// The ledger placed the container when its Pod was bound: hand out those cards when they are available.
	if p.Pending != nil {
		if recorded := p.Pending.Cards(ctx, p.Resource); len(recorded) > 0 {
			if p.Resource.Kind == Whole {
				if len(recorded) == size && subset(recorded, available) {
					return recorded
				}
			} else if tokens := tokensOn(available, recorded); len(tokens) == size {
				return tokens
			}
		}
	}
	ledger := map[string]pools.Card{}
	if p.Ledger != nil {
		if l, err := p.Ledger(ctx); err == nil {
			ledger = l
		}
	}
	byID := p.cardsByID()
	var ids []string
	var cards []pools.Card
	for _, id := range distinctCards(available) {
		c, ok := ledger[id]
		if !ok {
			c = pools.Card{ID: id, Remaining: pools.M, Slots: p.Resource.Vendor.SlicesPerCard}
		}
		ids, cards = append(ids, id), append(cards, c)
	}
	d := pools.Demand{Cards: int64(size)}
	switch p.Resource.Kind {
	case Whole:
		d.Family = pools.FamilyExclusive
	case Shared:
		d.Family = pools.FamilyShared
	case Partitioned:
		if p.Pending == nil {
			return nil
		}
		profile, _, err := p.Pending.Profile(ctx, p.Resource)
		if err != nil {
			return nil
		}
		d.Family, d.Profile = pools.FamilyPartitioned, profile
	case Sliced:
		d.Family, d.Units = pools.FamilySliced, 1
		if len(ids) > 0 && p.Pending != nil {
			if b, err := p.Pending.Budget(ctx, p.Resource, byID[ids[0]]); err == nil && byID[ids[0]].MemoryMiB > 0 {
				d.Units = max(1, b.MemoryMiB*pools.M/byID[ids[0]].MemoryMiB)
			}
		}
	}
	chosen, _, err := pools.Fit(cards, d)
	if err != nil {
		return nil
	}
	var on []string
	for _, i := range chosen {
		on = append(on, ids[i])
	}
	if p.Resource.Kind == Whole {
		return on
	}
	if tokens := tokensOn(available, on); len(tokens) == size {
		return tokens
	}
	return nil
}

// Allocate gives each container its cards: visible through the vendor's variable, and for a slice with the
// enforcer's limits from the container's budget.
func (p *Plugin) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	byID := p.cardsByID()
	resp := &pluginapi.AllocateResponse{}
	for _, creq := range req.ContainerRequests {
		var cards []providers.Device
		for _, id := range distinctCards(creq.DevicesIds) {
			c, ok := byID[id]
			if !ok {
				return nil, errors.Errorf("%s: card %s is not on this node", p.Resource.Name, id)
			}
			cards = append(cards, c)
		}
		var cresp *pluginapi.ContainerAllocateResponse
		switch p.Resource.Kind {
		case Whole:
			cresp = p.Runtime.WholeCards(p.Resource.Vendor.Key, cards)
		case Shared:
			if len(cards) != len(creq.DevicesIds) {
				return nil, errors.Errorf("%s: %d shares must sit on %d distinct cards, got %d cards", p.Resource.Name,
					len(creq.DevicesIds), len(creq.DevicesIds), len(cards))
			}
			cresp = p.Runtime.WholeCards(p.Resource.Vendor.Key, cards)
		case Sliced:
			if len(creq.DevicesIds) != 1 {
				return nil, errors.Errorf("%s: a slice is always one card, got %d", p.Resource.Name, len(creq.DevicesIds))
			}
			if p.Pending == nil {
				return nil, errors.Errorf("%s: no source of slice budgets", p.Resource.Name)
			}
			b, err := p.Pending.Budget(ctx, p.Resource, cards[0])
			if err != nil {
				return nil, errors.Wrapf(err, "%s: cannot tell the slice's budget", p.Resource.Name)
			}
			units := int64(1)
			if cards[0].MemoryMiB > 0 {
				units = max(1, b.MemoryMiB*pools.M/cards[0].MemoryMiB)
			}
			if !p.NoSlicedAllocateGate {
				if err := p.roomFor(ctx, cards[0], pools.Demand{Family: pools.FamilySliced, Units: units}); err != nil {
					return nil, err
				}
			}
			key := strings.NewReplacer(":", "-", "/", "-").Replace(creq.DevicesIds[0])
			if cresp, err = p.Runtime.sliceFor(cards[0], b, key); err != nil {
				return nil, errors.Wrap(err, p.Resource.Name)
			}
		case Partitioned:
			var err error
			if cresp, err = p.partitionsFor(ctx, creq.DevicesIds, byID); err != nil {
				return nil, err
			}
		case Visibility:
			// The sidecar sees what its Pod's workload got; the tokens only count its cards.
			if reserved := p.Reservations.take(len(cards)); reserved != nil {
				cards = reserved
			}
			cresp = p.Runtime.WholeCards(p.Resource.Vendor.Key, cards)
		}
		if p.Resource.Kind != Visibility {
			p.Reservations.add(cards)
		}
		resp.ContainerResponses = append(resp.ContainerResponses, cresp)
	}
	return resp, nil
}

// roomFor checks the ledger before a slice or a partition is handed out: the card must have room for it,
// unless the ledger already charged it there (its cards are recorded on the Pod). A ledger that cannot be
// read counts every card free, as the per-card check had judged the Pod already.
func (p *Plugin) roomFor(ctx context.Context, card providers.Device, d pools.Demand) error {
	if p.Ledger == nil {
		return nil
	}
	ledger, err := p.Ledger(ctx)
	if err != nil {
		return nil
	}
	entry, ok := ledger[card.UUID]
	if !ok {
		return nil
	}
	if p.Pending != nil && slices.Contains(p.Pending.Cards(ctx, p.Resource), card.UUID) {
		return nil
	}
	if _, _, err := pools.Fit([]pools.Card{entry}, d); err != nil {
		return errors.Wrapf(err, "%s: card %s", p.Resource.Name, card.UUID)
	}
	return nil
}

// partitionsFor creates one partition of the pending container's profile per token, on the token's card, and
// makes them visible through the vendor's variable.
func (p *Plugin) partitionsFor(ctx context.Context, tokens []string, byID map[string]providers.Device) (*pluginapi.ContainerAllocateResponse, error) {
	if p.Partitioner == nil {
		return nil, errors.Errorf("%s: this node's %s backend cannot create partitions", p.Resource.Name, p.Resource.Vendor.Key)
	}
	if p.Pending == nil {
		return nil, errors.Errorf("%s: no source of partition profiles", p.Resource.Name)
	}
	profile, owner, err := p.Pending.Profile(ctx, p.Resource)
	if err != nil {
		return nil, errors.Wrapf(err, "%s: cannot tell the partition's profile", p.Resource.Name)
	}
	var devices []string
	for _, t := range tokens {
		if err := p.roomFor(ctx, byID[CardOf(t)], pools.Demand{Family: pools.FamilyPartitioned, Profile: profile, Cards: 1}); err != nil {
			return nil, err
		}
		dev, err := p.Partitioner.Create(ctx, byID[CardOf(t)], profile, owner)
		if err != nil {
			return nil, errors.Wrapf(err, "%s: cannot create a %s partition on card %s", p.Resource.Name, profile, CardOf(t))
		}
		devices = append(devices, dev)
	}
	return p.Runtime.expose(p.Resource.Vendor.Key, devices), nil
}

// PreStartContainer is not used; the plugin asks the kubelet not to call it.
func (p *Plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func (p *Plugin) cardsByID() map[string]providers.Device {
	out := map[string]providers.Device{}
	for _, c := range p.Cards() {
		if c.Manufacturer == p.Resource.Vendor.Key {
			out[c.UUID] = c
		}
	}
	return out
}

// distinctCards returns the cards of the tokens, in the order first seen.
func distinctCards(tokens []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tokens {
		if c := CardOf(t); !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// subset reports whether every one of ids is in all.
func subset(ids, all []string) bool {
	for _, id := range ids {
		found := false
		for _, a := range all {
			found = found || a == id
		}
		if !found {
			return false
		}
	}
	return true
}

// tokensOn returns, for each of the cards, the lowest-numbered available token on it not handed out yet, or
// nil when a card has none left. Lowest first keeps a partitioned card's tokens stable: its list shrinks from
// the top as partitions are made, so the token just allocated stays listed (a kubelet 1.35 that sees a token
// it has just allocated vanish from the list dereferences nil in its device manager and exits).
func tokensOn(available, cards []string) []string {
	sorted := slices.Clone(available)
	slices.SortFunc(sorted, compareTokens)
	taken := map[string]bool{}
	var out []string
	for _, id := range cards {
		found := false
		for _, t := range sorted {
			if !taken[t] && CardOf(t) == id {
				out, found, taken[t] = append(out, t), true, true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return out
}

// compareTokens orders tokens by card, then by their number (<card>/<kind>-<n>).
func compareTokens(a, b string) int {
	if c := strings.Compare(CardOf(a), CardOf(b)); c != 0 {
		return c
	}
	na, errA := strconv.Atoi(a[strings.LastIndex(a, "-")+1:])
	nb, errB := strconv.Atoi(b[strings.LastIndex(b, "-")+1:])
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return na - nb
}

// Reservations remember the cards recently allocated to a vendor's workloads, oldest first, so the SSH
// sidecar allocated next in the same Pod sees the same cards.
type Reservations struct {
	mu    sync.Mutex
	queue [][]providers.Device
}

func (r *Reservations) add(cards []providers.Device) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, cards)
	if len(r.queue) > 64 {
		r.queue = r.queue[1:]
	}
}

// peek returns the newest reservation of n cards without taking it.
func (r *Reservations) peek(n int) []providers.Device {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.queue) - 1; i >= 0; i-- {
		if len(r.queue[i]) == n {
			return r.queue[i]
		}
	}
	return nil
}

// take removes and returns the newest reservation of n cards.
func (r *Reservations) take(n int) []providers.Device {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.queue) - 1; i >= 0; i-- {
		if len(r.queue[i]) == n {
			cards := r.queue[i]
			r.queue = append(r.queue[:i], r.queue[i+1:]...)
			return cards
		}
	}
	return nil
}
