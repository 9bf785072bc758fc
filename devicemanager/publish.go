// Package devicemanager is the per-node agent: it runs a device provider and publishes what it found as the
// node's device-manager NodeFeature (acceleratable.feature.gpustack.ai/* labels, which NFD copies onto the
// Node) and the node's Devices object (the inventory, in spec; the ledger in status is the worker's).
package devicemanager

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/devicemanager/nodefeature"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/rdma"
)

// +kubebuilder:rbac:groups=nfd.k8s-sigs.io,namespace=gpustack-system,resources=nodefeatures,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=worker.gpustack.ai,resources=devices,verbs=get;list;watch;create;update;patch;delete

// Publisher writes a node's NodeFeature and Devices object, and nothing when nothing changed.
type Publisher struct {
	Client client.Client
}

// Publish writes what the node's provider detected, the cards and whether its RDMA devices can carry traffic,
// and sets the node's card gauges.
func (p *Publisher) Publish(ctx context.Context, node string, devices []providers.Device, nics []rdma.Device) error {
	ObserveCards(node, devices)
	labels := providers.NodeLabels(devices)
	if rdma.Capable(nics) {
		labels[workerv1.LabelRDMACapable] = "true"
	}
	if err := p.publishNodeFeature(ctx, node, labels); err != nil {
		return err
	}
	if len(devices) == 0 {
		// A node without accelerators has no Devices object.
		return client.IgnoreNotFound(p.Client.Delete(ctx, &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: node}}))
	}
	return p.publishDevices(ctx, node, devices)
}

func (p *Publisher) publishNodeFeature(ctx context.Context, node string, labels map[string]string) error {
	return nodefeature.Apply(ctx, p.Client, workerv1.NodeFeatureName(node, workerv1.NodeFeatureDeviceManager), node, "gpustack-operator-device-manager",
		nfdv1alpha1.NodeFeatureSpec{Labels: labels})
}

func (p *Publisher) publishDevices(ctx context.Context, node string, devices []providers.Device) error {
	spec := providers.DevicesSpec(devices)
	labels := map[string]string{}
	for _, g := range spec.Groups {
		labels[workerv1.AcceleratablePrefix+pools.GroupKey(g)] = "true"
	}
	d := &workerv1.Devices{}
	err := p.Client.Get(ctx, client.ObjectKey{Name: node}, d)
	switch {
	case apierrors.IsNotFound(err):
		d = &workerv1.Devices{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: labels}, Spec: spec}
		// Made a moment ago and not read back yet (reads may come from a watch): the next detection compares.
		return errors.Wrap(client.IgnoreAlreadyExists(p.Client.Create(ctx, d)), "cannot create Devices")
	case err != nil:
		return errors.Wrap(err, "cannot get Devices")
	}
	before := d.DeepCopy()
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
	// A merge patch, not an update: the object read may be a moment old (a watch's), and the worker writes its
	// status meanwhile; the agent's spec and labels are its own.
	return errors.Wrap(p.Client.Patch(ctx, d, client.MergeFrom(before)), "cannot patch Devices")
}
