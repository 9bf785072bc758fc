package devicemanager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
	"github.com/gpustack/gpustack-operator/devicemanager/dra"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/rdma"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Agent is one node's device manager: it detects the cards on start and every Interval, publishes them, and,
// when PluginDir is set, serves the kubelet device plugin for every vendor it found.
type Agent struct {
	// Node is the node's name.
	Node string
	// Provider detects the node's cards.
	Provider providers.Provider
	// Client writes the NodeFeature and Devices object and reads Pods, from the API server; the node's own
	// Devices object and NodeFeature may be read from a watch of them (OwnReads).
	Client client.Client
	// Interval is how often to detect again.
	Interval time.Duration
	// PluginDir is the kubelet's device-plugin directory; no plugin is served when empty.
	PluginDir string
	// Runtime says where the soft-slicing libraries are staged.
	Runtime deviceplugin.Runtime
	// Log reports what could not be done.
	Log logr.Logger
	// Partitioners create and reclaim hardware partitions, by vendor key; a vendor without one refuses them.
	Partitioners map[string]deviceplugin.Partitioner
	// NoSlicedAllocateGate hands out slices without checking the ledger first (Plugin.NoSlicedAllocateGate).
	NoSlicedAllocateGate bool
	// ExcludedDevices is the node's file of the cards left out (ExcludedDevicesPath), read at each detection:
	// they are neither published nor served, as if the node had them not. Empty leaves none out.
	ExcludedDevices string
	// PodResources is the kubelet's pod-resources socket, which tells the container an allocation is for
	// (PodBudgets.PodResources); empty tells it from the API server's Pods alone.
	PodResources string
	// RDMA finds the node's RDMA devices at each detection; nil finds none. The node is labelled RDMA capable
	// while one has a port up, and, when PluginDir is set, the RDMA resources are served while it has any.
	RDMA func() ([]rdma.Device, error)
	// DRA publishes the cards to Dynamic Resource Allocation through a driver per vendor registered with the
	// kubelet; nil where the cluster serves no DRA or the agent was told not to.
	DRA *dra.Drivers
	// PluginCheck is how often the plugins' sockets are looked at, so a kubelet that started again (and removed
	// them) has the plugins registered again within that time; 2 s when zero.
	PluginCheck time.Duration

	// mu guards cards and published, which the readiness probe reads; servingMu guards the plugins' maps.
	mu           sync.Mutex
	servingMu    sync.Mutex
	cards        []providers.Device
	nics         []rdma.Device
	published    bool
	plugins      map[string]*deviceplugin.Plugin
	rdmaPlugins  map[string]*deviceplugin.RDMAPlugin
	servers      map[string]*deviceplugin.Server
	reservations map[string]*deviceplugin.Reservations
	// partitionTokens are what the partitioned cards offered when last listed, and claimedCards the cards
	// DRA held then; only Run's goroutine uses them.
	partitionTokens, claimedCards string
	// excluded are the cards ExcludedDevices last listed; only Run's goroutine uses it.
	excluded map[string]bool
}

// Run detects, publishes and serves until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	pub := &Publisher{Client: a.Client}
	a.servingMu.Lock()
	a.plugins, a.servers, a.reservations = map[string]*deviceplugin.Plugin{}, map[string]*deviceplugin.Server{}, map[string]*deviceplugin.Reservations{}
	a.rdmaPlugins = map[string]*deviceplugin.RDMAPlugin{}
	a.servingMu.Unlock()
	check := a.PluginCheck
	if check <= 0 {
		check = 2 * time.Second
	}
	detect := time.NewTimer(0)
	defer detect.Stop()
	plugins := time.NewTicker(check)
	defer plugins.Stop()
	if a.DRA != nil {
		defer a.DRA.Stop()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-plugins.C:
		case <-detect.C:
			a.detect(ctx, pub)
			a.reclaim(ctx)
			detect.Reset(a.Interval)
		}
		if a.PluginDir != "" {
			a.servePlugins(ctx)
			a.followLedger(ctx)
		}
		if a.DRA != nil {
			// Unchanged cards publish nothing; a driver that could not start is tried again here.
			a.DRA.Publish(ctx, a.currentCards())
		}
	}
}

// detect detects the cards and the RDMA devices and publishes them.
func (a *Agent) detect(ctx context.Context, pub *Publisher) {
	cards, err := a.Provider.Detect(ctx)
	if err != nil {
		a.Log.Error(err, "some cards could not be read", "node", a.Node)
	}
	if err != nil && len(cards) == 0 {
		return
	}
	cards = withoutExcluded(cards, a.readExcluded())
	nics := a.scanRDMA()
	if err := pub.Publish(ctx, a.Node, cards, nics); err != nil {
		a.Log.Error(err, "cannot publish the cards", "node", a.Node)
	} else {
		a.mu.Lock()
		a.published = true
		a.mu.Unlock()
	}
	a.setCards(cards)
	a.setNICs(nics)
}

// readExcluded returns the cards ExcludedDevices lists. A file that cannot be read or holds a bad line (said
// in the log) leaves out those last listed: a card taken out of service stays out until the file is mended.
func (a *Agent) readExcluded() map[string]bool {
	if a.ExcludedDevices == "" {
		return nil
	}
	excluded, err := readExcluded(a.ExcludedDevices)
	if err != nil {
		a.Log.Error(err, "cannot read the excluded cards; leaving out those last listed", "node", a.Node)
		return a.excluded
	}
	if !maps.Equal(excluded, a.excluded) {
		a.Log.Info("the cards left out changed", "node", a.Node, "file", a.ExcludedDevices, "cards", slices.Sorted(maps.Keys(excluded)))
	}
	a.excluded = excluded
	return excluded
}

// scanRDMA returns the node's RDMA devices. When they cannot be read (said in the log) it returns those last
// found: a bus that could not be read once says nothing of the devices, and their label and resources stay.
func (a *Agent) scanRDMA() []rdma.Device {
	if a.RDMA == nil {
		return nil
	}
	nics, err := a.RDMA()
	if err != nil {
		a.Log.Error(err, "cannot read the RDMA devices; keeping those last found", "node", a.Node)
		return a.currentNICs()
	}
	return nics
}

// reclaim destroys the partitions whose Pod is gone and the orphans, once per detection.
func (a *Agent) reclaim(ctx context.Context) {
	var partitioned []providers.Device
	for _, c := range a.currentCards() {
		if a.Partitioners[c.Manufacturer] != nil && len(c.Partitions) > 0 {
			partitioned = append(partitioned, c)
		}
	}
	// A node without cards in a partitioning mode has nothing to reclaim: its Pods are not listed.
	if len(partitioned) == 0 {
		return
	}
	var pods corev1.PodList
	if err := a.Client.List(ctx, &pods, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", a.Node)}); err != nil {
		a.Log.Error(err, "cannot list the node's Pods; partitions are not reclaimed this round", "node", a.Node)
		return
	}
	live := map[string]bool{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live[string(p.UID)] = true
		}
	}
	for _, c := range partitioned {
		for _, err := range a.Partitioners[c.Manufacturer].Reclaim(ctx, c, func(owner string) bool { return live[owner] }) {
			a.Log.Error(err, "cannot reclaim a partition", "node", a.Node, "card", c.UUID)
		}
	}
}

// Ready says why the agent is not ready, nil when it is: the node's cards are published, and, when it serves
// the device plugin, every resource of every vendor found is registered with the kubelet, as is, when it
// publishes to DRA, every vendor's DRA driver.
func (a *Agent) Ready() error {
	a.mu.Lock()
	published := a.published
	a.mu.Unlock()
	if !published {
		return errors.Errorf("the cards of node %s are not published yet", a.Node)
	}
	if a.DRA != nil {
		if err := a.DRA.Ready(); err != nil {
			return err
		}
	}
	if a.PluginDir == "" {
		return nil
	}
	a.servingMu.Lock()
	defer a.servingMu.Unlock()
	for _, name := range a.wantedResources() {
		if s := a.servers[name]; s == nil || !s.Registered() {
			return errors.Errorf("the device plugin of %s is not registered with the kubelet", name)
		}
	}
	return nil
}

// setCards records the cards and tells the plugins when they changed.
func (a *Agent) setCards(cards []providers.Device) {
	a.mu.Lock()
	changed := !apiequality.Semantic.DeepEqual(a.cards, cards)
	a.cards = cards
	a.mu.Unlock()
	if !changed {
		return
	}
	for _, p := range a.plugins {
		p.Changed()
	}
}

// setNICs records the RDMA devices and tells the RDMA plugins when they changed.
func (a *Agent) setNICs(nics []rdma.Device) {
	a.mu.Lock()
	changed := !apiequality.Semantic.DeepEqual(a.nics, nics)
	a.nics = nics
	a.mu.Unlock()
	if !changed {
		return
	}
	a.servingMu.Lock()
	defer a.servingMu.Unlock()
	for _, p := range a.rdmaPlugins {
		p.Changed()
	}
}

func (a *Agent) currentNICs() []rdma.Device {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nics
}

func (a *Agent) currentCards() []providers.Device {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cards
}

// wantedResources returns the device-plugin resources of every vendor with cards on the node, and the RDMA
// resources where it has RDMA devices.
func (a *Agent) wantedResources() []string {
	var out []string
	for _, k := range deviceplugin.RDMAKinds(a.currentNICs()) {
		out = append(out, k.Resource())
	}
	seen := map[string]bool{}
	for _, c := range a.currentCards() {
		v, ok := vendors.Lookup(c.Manufacturer)
		if !ok || seen[v.Key] {
			continue
		}
		seen[v.Key] = true
		for _, r := range deviceplugin.Resources(v) {
			out = append(out, r.Name)
		}
	}
	return out
}

// servePlugins serves the plugin of every resource of every vendor with cards, and the RDMA resources where the
// node has RDMA devices, that is not served, or whose socket the kubelet removed when it started again; one
// that fails (the kubelet not up yet) is tried again at the next check.
func (a *Agent) servePlugins(ctx context.Context) {
	a.servingMu.Lock()
	defer a.servingMu.Unlock()
	for _, k := range deviceplugin.RDMAKinds(a.currentNICs()) {
		if a.rdmaPlugins[k.Resource()] == nil {
			a.rdmaPlugins[k.Resource()] = &deviceplugin.RDMAPlugin{Kind: k, Devices: a.currentNICs}
		}
		a.serve(ctx, k.Resource(), a.rdmaPlugins[k.Resource()])
	}
	for _, c := range a.currentCards() {
		v, ok := vendors.Lookup(c.Manufacturer)
		if !ok {
			continue
		}
		if a.reservations[v.Key] == nil {
			a.reservations[v.Key] = &deviceplugin.Reservations{}
		}
		for _, r := range deviceplugin.Resources(v) {
			// One plugin per resource for the agent's life: its reservations and watchers outlive a kubelet restart.
			p := a.plugins[r.Name]
			if p == nil {
				p = &deviceplugin.Plugin{Resource: r, Cards: a.currentCards, Ledger: a.Ledger, Runtime: a.Runtime,
					Pending: deviceplugin.PodBudgets{Reader: a.Client, Node: a.Node, PodResources: a.PodResources}, Reservations: a.reservations[v.Key],
					Partitioner: a.Partitioners[v.Key], NoSlicedAllocateGate: a.NoSlicedAllocateGate}
				a.plugins[r.Name] = p
			}
			a.serve(ctx, r.Name, p)
		}
	}
}

// serve serves a resource's plugin unless it is served and registered; servingMu is held.
func (a *Agent) serve(ctx context.Context, resource string, p pluginapi.DevicePluginServer) {
	if s := a.servers[resource]; s != nil {
		if s.Registered() {
			return
		}
		a.Log.Info("the kubelet forgot the device plugin; registering it again", "resource", resource)
		s.Stop()
		delete(a.servers, resource)
	}
	s, err := deviceplugin.Serve(ctx, a.PluginDir, resource, p)
	if err != nil {
		a.Log.Error(err, "cannot serve the device plugin", "resource", resource)
		return
	}
	a.servers[resource] = s
}

// followLedger lists the resources' tokens again when the ledger changed what the node's cards offer: the
// partitions a partitioned card holds plus the most it can still make (so the kubelet's pool key follows), and
// the cards DRA allocated to ResourceClaims (listed unhealthy).
func (a *Agent) followLedger(ctx context.Context) {
	ledger, err := a.Ledger(ctx)
	if err != nil {
		return
	}
	var offers, claimed strings.Builder
	for _, c := range a.currentCards() {
		e, ok := ledger[c.UUID]
		if ok && e.Partitioned() {
			fmt.Fprintf(&offers, "%s=%d;", c.UUID, pools.PartitionTokens(e))
		}
		if len(e.ResourceClaims) > 0 {
			fmt.Fprintf(&claimed, "%s;", c.UUID)
		}
	}
	partitions, claims := offers.String() != a.partitionTokens, claimed.String() != a.claimedCards
	if !partitions && !claims {
		return
	}
	a.partitionTokens, a.claimedCards = offers.String(), claimed.String()
	a.servingMu.Lock()
	defer a.servingMu.Unlock()
	for _, p := range a.plugins {
		if claims || p.Resource.Kind == deviceplugin.Partitioned {
			p.Changed()
		}
	}
}

// Ledger reads the node's ledger from its Devices object, by card ID.
func (a *Agent) Ledger(ctx context.Context) (map[string]pools.Card, error) {
	d := &workerv1.Devices{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: a.Node}, d); err != nil {
		return nil, err
	}
	return pools.LedgerCards(d), nil
}
