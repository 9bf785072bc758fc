package dra

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpustack/gpustack-operator/envvar"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get

// Drivers are a node's DRA drivers, one per vendor with cards: each registered with the kubelet and publishing
// its vendor's cards as the node's ResourceSlices.
type Drivers struct {
	// Node is the node's name.
	Node string
	// Client writes the ResourceSlices and reads the claims the kubelet asks to prepare.
	Client kubernetes.Interface
	// RegistrarDir is the kubelet's plugin registration directory (kubeletplugin.KubeletRegistryDir).
	RegistrarDir string
	// PluginDir holds each driver's own directory, with the socket the kubelet calls it at
	// (kubeletplugin.KubeletPluginsDir).
	PluginDir string
	// CDIDir is where a prepared claim's CDI spec is written (DefaultCDIDir), for the node's container runtime
	// to read when the kubelet names the claim's CDI devices.
	CDIDir string
	// Edits is what a container gets for whole cards: the device plugins' Runtime.WholeCards, so a card reaches
	// a container alike through either.
	Edits func(vendor string, cards []providers.Device) *pluginapi.ContainerAllocateResponse
	// Ledger returns the node's ledger by card ID: the cards containers hold through the device plugins are
	// left out of the slices and refused to claims. Nil counts every card free.
	Ledger func(ctx context.Context) (map[string]pools.Card, error)
	// Log reports what could not be done.
	Log logr.Logger

	mu        sync.Mutex
	helpers   map[string]*kubeletplugin.Helper
	published map[string]resourceslice.DriverResources
	// wanted are the vendors the node has cards of, as last published, and cards their cards.
	wanted []string
	cards  map[string][]providers.Device
}

// Publish starts the driver of every vendor with cards that has none yet, and publishes each started
// driver's cards where they changed (an empty pool where the vendor's cards are gone), less those the ledger
// says containers hold through the device plugins. A driver that cannot start (the kubelet's directories not
// there yet) is said in the log and tried again at the next call.
func (d *Drivers) Publish(ctx context.Context, cards []providers.Device) {
	ledger, err := d.ledger(ctx)
	if err != nil {
		d.Log.Error(err, "cannot read the ledger; publishing every card", "node", d.Node)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.helpers == nil {
		d.helpers, d.published = map[string]*kubeletplugin.Helper{}, map[string]resourceslice.DriverResources{}
	}
	byVendor := map[string][]providers.Device{}
	free := map[string][]providers.Device{}
	for _, c := range cards {
		if v, ok := vendors.Lookup(c.Manufacturer); ok {
			byVendor[v.Key] = append(byVendor[v.Key], c)
			if !heldByContainers(ledger[c.UUID]) {
				free[v.Key] = append(free[v.Key], c)
			}
		}
	}
	d.wanted, d.cards = slices.Sorted(maps.Keys(byVendor)), byVendor
	for _, vendor := range d.wanted {
		if d.helpers[vendor] != nil {
			continue
		}
		h, err := d.start(ctx, vendor)
		if err != nil {
			d.Log.Error(err, "cannot start the DRA driver; trying again at the next detection", "node", d.Node, "driver", DriverName(vendor))
			continue
		}
		d.helpers[vendor] = h
	}
	for vendor, h := range d.helpers {
		want := Resources(d.Node, free[vendor])
		if old, ok := d.published[vendor]; ok && apiequality.Semantic.DeepEqual(old, want) {
			continue
		}
		if err := h.PublishResources(ctx, want); err != nil {
			d.Log.Error(err, "cannot publish the cards as ResourceSlices", "node", d.Node, "driver", DriverName(vendor))
			continue
		}
		d.published[vendor] = want
	}
}

// start registers the vendor's driver with the kubelet and serves it, from a directory of its own under
// PluginDir.
func (d *Drivers) start(ctx context.Context, vendor string) (*kubeletplugin.Helper, error) {
	name := DriverName(vendor)
	if err := os.MkdirAll(filepath.Join(d.PluginDir, name), 0o750); err != nil {
		return nil, errors.Wrapf(err, "cannot make the directory of DRA driver %s", name)
	}
	// The helper logs through klog from the context; the agent's logger takes it.
	ctx = klog.NewContext(ctx, d.Log.WithValues("driver", name))
	h, err := kubeletplugin.Start(ctx, &driver{name: name, node: d.Node, vendor: vendor, drivers: d, log: d.Log.WithValues("driver", name)},
		kubeletplugin.DriverName(name), kubeletplugin.KubeClient(d.Client), kubeletplugin.NodeName(d.Node),
		kubeletplugin.RegistrarDirectoryPath(d.RegistrarDir), kubeletplugin.PluginDataDirectoryPath(filepath.Join(d.PluginDir, name)))
	return h, errors.Wrapf(err, "cannot start DRA driver %s", name)
}

// Ready says which driver of a vendor with cards is not serving or not registered with the kubelet yet; nil
// when every one is.
func (d *Drivers) Ready() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, vendor := range d.wanted {
		h := d.helpers[vendor]
		if h == nil {
			return errors.Errorf("the DRA driver %s of node %s could not start", DriverName(vendor), d.Node)
		}
		if s := h.RegistrationStatus(); s == nil || !s.PluginRegistered {
			return errors.Errorf("the DRA driver %s is not registered with the kubelet of node %s", DriverName(vendor), d.Node)
		}
	}
	return nil
}

// Stop stops every driver: the kubelet sees it unregister and, unless it comes back, removes its slices.
func (d *Drivers) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.helpers {
		h.Stop()
	}
	d.helpers, d.published, d.wanted, d.cards = nil, nil, nil, nil
}

// vendorCards returns the vendor's cards as last published.
func (d *Drivers) vendorCards(vendor string) []providers.Device {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cards[vendor]
}

// ledger reads the node's ledger; without a Ledger every card is free.
func (d *Drivers) ledger(ctx context.Context) (map[string]pools.Card, error) {
	if d.Ledger == nil {
		return nil, nil
	}
	return d.Ledger(ctx)
}

// specPath is the file of a claim's CDI spec: one per claim, so unpreparing it removes what preparing made.
func (d *Drivers) specPath(driver, claimUID string) string {
	dir := d.CDIDir
	if dir == "" {
		dir = DefaultCDIDir
	}
	return filepath.Join(dir, driver+"-claim_"+claimUID+".json")
}

// driver is one vendor's DRA driver as the kubelet calls it.
type driver struct {
	name, node, vendor string
	drivers            *Drivers
	log                logr.Logger
}

// PrepareResourceClaims gives each claim the cards it was allocated on this node, as CDI devices the kubelet
// names to the container runtime; a claim that cannot have them is answered with the reason.
func (p *driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		out[c.UID] = p.prepare(ctx, c)
	}
	return out, nil
}

// UnprepareResourceClaims removes each claim's CDI spec; one never written (its preparing failed) is no error.
func (p *driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		err := os.Remove(p.drivers.specPath(p.name, string(c.UID)))
		if err != nil && !os.IsNotExist(err) {
			out[c.UID] = errors.Wrapf(err, "ResourceClaim %s: cannot remove its CDI spec", c.String())
			continue
		}
		out[c.UID] = nil
	}
	return out, nil
}

// HandleError logs what went wrong in the background (a slice the API server refused); publishing goes on
// with the next change.
func (p *driver) HandleError(_ context.Context, err error, msg string) {
	p.log.Error(err, msg, "node", p.node)
}

// EnvPublish names the variable that turns the DRA drivers off.
const EnvPublish = "GPUSTACK_DRA_PUBLISH"

// Publishing reads EnvPublish through getenv: true (the default) publishes the cards to DRA where the cluster
// serves it, false does not. A value that is not a boolean is an error naming the variable.
func Publishing(getenv func(string) string) (bool, error) {
	return envvar.Bool(getenv, EnvPublish, true)
}

// Served reports whether the API server serves ResourceSlices at resource.k8s.io/v1 (Kubernetes 1.34 and
// later): a cluster that does not has no DRA for the drivers to publish to.
func Served(c discovery.DiscoveryInterface) (bool, error) {
	list, err := c.ServerResourcesForGroupVersion(resourceapi.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, errors.Wrap(err, "cannot discover resource.k8s.io/v1")
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "resourceslices" }), nil
}
