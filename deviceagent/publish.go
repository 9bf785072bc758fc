// Package deviceagent is the per-node agent: it runs a device provider and publishes what it found as the
// node's device-manager NodeFeature (acceleratable.feature.gpustack.ai/* labels, which NFD copies onto the
// Node) and the node's Devices object (the inventory, in spec; the ledger in status is the worker's).
package deviceagent

import (
	"context"
	"sort"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/pools"
	"github.com/gpustack/gpustack-operator/internal/vendors"
	"github.com/gpustack/gpustack-operator/providers"
)

// NodeFeatureName is the name of a node's device-manager NodeFeature.
func NodeFeatureName(node string) string { return node + "-gpustack-device-manager" }

// Labels returns the NodeFeature labels for the node's cards: per manufacturer its presence and driver and
// runtime versions, per product group its key, count, memory, cores, family, product and compute capability.
// Values left undetected are left out.
func Labels(devices []providers.Device) map[string]string {
	if len(devices) == 0 {
		return map[string]string{}
	}
	l := map[string]string{pools.LabelAcceleratable: "true"}
	for _, g := range group(devices) {
		d := g.first
		mfr := pools.AcceleratablePrefix + d.Manufacturer
		l[mfr] = "true"
		setIf(l, mfr+".driver-version", d.DriverVersion)
		setIf(l, mfr+".runtime-version", d.RuntimeVersion)
		key := pools.AcceleratablePrefix + g.key
		l[key] = "true"
		l[key+".count"] = pools.FormatCount(int64(len(g.cards)))
		setIf(l, key+".memory", pools.MemoryLabel(d.MemoryMiB))
		if d.Cores > 0 {
			l[key+".cores"] = pools.FormatCount(d.Cores)
		}
		setIf(l, key+".family", d.Family)
		setIf(l, key+".product", pools.ProductLabel(d.Product))
		setIf(l, key+".comcap", d.ComputeCapability)
	}
	return l
}

// Spec returns the Devices spec for the node's cards, one group per product.
func Spec(devices []providers.Device) workerv1.DevicesSpec {
	var spec workerv1.DevicesSpec
	for _, g := range group(devices) {
		d := g.first
		dg := workerv1.DeviceGroup{
			ID: pools.GroupID(d.Manufacturer, g.key), Manufacturer: d.Manufacturer, Name: d.Product,
			Memory: d.MemoryMiB, Cores: d.Cores, DriverVersion: d.DriverVersion, RuntimeVersion: d.RuntimeVersion,
			ComputeCapability: d.ComputeCapability, Family: d.Family,
		}
		v, _ := vendors.Lookup(d.Manufacturer)
		for _, c := range g.cards {
			a := workerv1.Accelerator{ID: c.UUID, Index: c.Index, Status: workerv1.AcceleratorStatus{Unhealthy: c.Unhealthy}}
			switch {
			case len(c.Partitions) > 0:
				// A card in a partitioning mode offers partitions only.
				ps := &workerv1.PhysicalSlicedCapability{}
				for _, p := range c.Partitions {
					ps.Count = max(ps.Count, p.Count)
					ps.Profiles = append(ps.Profiles, workerv1.PartitionProfile{Name: p.Name, MemoryMiB: p.MemoryMiB,
						ComputeSlices: p.ComputeSlices, Count: p.Count, Placements: p.Placements})
				}
				a.Status.PhysicalSliced = ps
			case v.SlicesPerCard > 0:
				a.Status.LogicalSliced = &workerv1.LogicalSlicedCapability{Count: v.SlicesPerCard, CoresPercentageOvercommit: v.CoresOvercommit}
			}
			dg.Accelerators = append(dg.Accelerators, a)
		}
		spec.Groups = append(spec.Groups, dg)
	}
	return spec
}

type productGroup struct {
	key   string
	first providers.Device
	cards []providers.Device
}

// group sorts cards into product groups by aKey, each group's cards by index.
func group(devices []providers.Device) []productGroup {
	byKey := map[string]*productGroup{}
	for _, d := range devices {
		key := pools.AcceleratorKey(d.Manufacturer, d.Product)
		g := byKey[key]
		if g == nil {
			g = &productGroup{key: key, first: d}
			byKey[key] = g
		}
		g.cards = append(g.cards, d)
	}
	var out []productGroup
	for _, g := range byKey {
		sort.Slice(g.cards, func(i, j int) bool { return g.cards[i].Index < g.cards[j].Index })
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func setIf(l map[string]string, k, v string) {
	if v != "" {
		l[k] = v
	}
}

// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,namespace=gpustack-system,resources=nodefeatures,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=devices,verbs=get;list;watch;create;update;delete

// Publisher writes a node's NodeFeature and Devices object, and nothing when nothing changed.
type Publisher struct {
	Client client.Client
}

// Publish writes what the node's provider detected.
func (p *Publisher) Publish(ctx context.Context, node string, devices []providers.Device) error {
	if err := p.publishNodeFeature(ctx, node, Labels(devices)); err != nil {
		return err
	}
	if len(devices) == 0 {
		// A node without accelerators has no Devices object.
		return client.IgnoreNotFound(p.Client.Delete(ctx, &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: node}}))
	}
	return p.publishDevices(ctx, node, devices)
}

func (p *Publisher) publishNodeFeature(ctx context.Context, node string, labels map[string]string) error {
	nf := &nfdv1alpha1.NodeFeature{}
	key := client.ObjectKey{Namespace: workerv1.SystemNamespace, Name: NodeFeatureName(node)}
	err := p.Client.Get(ctx, key, nf)
	if apierrors.IsNotFound(err) {
		nf = &nfdv1alpha1.NodeFeature{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
				nfdv1alpha1.NodeFeatureObjNodeNameLabel: node,
				"app.kubernetes.io/part-of":             "gpustack-operator-device-manager",
			}},
			Spec: nfdv1alpha1.NodeFeatureSpec{Labels: labels},
		}
		return errors.Wrap(p.Client.Create(ctx, nf), "cannot create device-manager NodeFeature")
	}
	if err != nil {
		return errors.Wrap(err, "cannot get device-manager NodeFeature")
	}
	if apiequality.Semantic.DeepEqual(nf.Spec.Labels, labels) || len(nf.Spec.Labels) == 0 && len(labels) == 0 {
		return nil
	}
	nf.Spec.Labels = labels
	return errors.Wrap(p.Client.Update(ctx, nf), "cannot update device-manager NodeFeature")
}

func (p *Publisher) publishDevices(ctx context.Context, node string, devices []providers.Device) error {
	spec := Spec(devices)
	labels := map[string]string{}
	for _, g := range spec.Groups {
		labels[pools.AcceleratablePrefix+pools.AcceleratorKey(g.Manufacturer, g.Name)] = "true"
	}
	d := &workerv1.Devices{}
	err := p.Client.Get(ctx, client.ObjectKey{Name: node}, d)
	switch {
	case apierrors.IsNotFound(err):
		d = &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: labels}, Spec: spec}
		return errors.Wrap(p.Client.Create(ctx, d), "cannot create Devices")
	case err != nil:
		return errors.Wrap(err, "cannot get Devices")
	}
	changed := !apiequality.Semantic.DeepEqual(d.Spec, spec)
	for k, v := range labels {
		if d.Labels[k] != v {
			changed = true
			if d.Labels == nil {
				d.Labels = map[string]string{}
			}
			d.Labels[k] = v
		}
	}
	if !changed {
		return nil
	}
	d.Spec = spec
	return errors.Wrap(p.Client.Update(ctx, d), "cannot update Devices")
}
