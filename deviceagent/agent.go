package deviceagent

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/deviceagent/deviceplugin"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Agent is one node's device agent: it detects the cards on start and every Interval, publishes them, and,
// when PluginDir is set, serves the kubelet device plugin for every vendor it found.
type Agent struct {
	// Node is the node's name.
	Node string
	// Provider detects the node's cards.
	Provider providers.Provider
	// Client writes the NodeFeature and Devices object and reads Pods; uncached.
	Client client.Client
	// Interval is how often to detect again.
	Interval time.Duration
	// PluginDir is the kubelet's device-plugin directory; no plugin is served when empty.
	PluginDir string
	// Runtime says where the soft-slicing libraries are staged.
	Runtime deviceplugin.Runtime
	// Log reports what could not be done.
	Log logr.Logger

	mu           sync.Mutex
	cards        []providers.Device
	plugins      map[string]*deviceplugin.Plugin
	reservations map[string]*deviceplugin.Reservations
}

// Run detects, publishes and serves until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	pub := &Publisher{Client: a.Client}
	a.plugins, a.reservations = map[string]*deviceplugin.Plugin{}, map[string]*deviceplugin.Reservations{}
	for {
		cards, err := a.Provider.Detect(ctx)
		if err != nil {
			a.Log.Error(err, "some cards could not be read", "node", a.Node)
		}
		if err == nil || len(cards) > 0 {
			if err := pub.Publish(ctx, a.Node, cards); err != nil {
				a.Log.Error(err, "cannot publish the cards", "node", a.Node)
			}
			a.setCards(cards)
		}
		if a.PluginDir != "" {
			a.servePlugins(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(a.Interval):
		}
	}
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

func (a *Agent) currentCards() []providers.Device {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cards
}

// servePlugins starts the plugin of every resource of every vendor with cards that is not served yet; one
// that fails (the kubelet not up yet) is tried again after the next detection.
func (a *Agent) servePlugins(ctx context.Context) {
	for _, c := range a.currentCards() {
		v, ok := vendors.Lookup(c.Manufacturer)
		if !ok {
			continue
		}
		if a.reservations[v.Key] == nil {
			a.reservations[v.Key] = &deviceplugin.Reservations{}
		}
		for _, r := range deviceplugin.Resources(v) {
			if a.plugins[r.Name] != nil {
				continue
			}
			p := &deviceplugin.Plugin{Resource: r, Cards: a.currentCards, Ledger: a.ledger, Runtime: a.Runtime,
				Pending: deviceplugin.PodBudgets{Reader: a.Client, Node: a.Node}, Reservations: a.reservations[v.Key]}
			if _, err := deviceplugin.Serve(ctx, a.PluginDir, p); err != nil {
				a.Log.Error(err, "cannot serve the device plugin", "resource", r.Name)
				continue
			}
			a.plugins[r.Name] = p
		}
	}
}

// ledger reads the node's ledger from its Devices object.
func (a *Agent) ledger(ctx context.Context) (map[string]pools.Card, error) {
	d := &workerv1.Devices{}
	if err := a.Client.Get(ctx, client.ObjectKey{Name: a.Node}, d); err != nil {
		return nil, err
	}
	return pools.LedgerCards(d), nil
}
