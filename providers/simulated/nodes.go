package simulated

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
)

// Nodes profiles an inventory's nodes as the cluster would: the labels NFD would carry onto each
// Node from the worker's and the device manager's NodeFeatures, read back by the same code the composer uses,
// with a fresh ledger. Every node is managed.
func Nodes(ctx context.Context, inv *Inventory) ([]pools.Node, error) {
	out := make([]pools.Node, 0, len(inv.Nodes))
	for _, in := range inv.Nodes {
		devices, err := New(in).Detect(ctx)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot detect the devices of node %s", in.Name)
		}
		labels := map[string]string{workerv1.LabelOS: in.OS, workerv1.LabelArch: in.Arch}
		for k, v := range pools.WorkerLabels(in.CPU.Vendor, in.CPU.Model, in.CPU.Family, in.CPU.ID, in.CPU.Cores, "true") {
			labels[k] = v
		}
		for k, v := range providers.NodeLabels(devices) {
			labels[k] = v
		}
		n, err := pools.NodeFromLabels(in.Name, labels, map[string]string{workerv1.AnnotationCPUName: in.CPU.Model})
		if err != nil {
			return nil, err
		}
		spec := providers.DevicesSpec(devices)
		n.AttachLedger(&workerv1.Devices{Spec: spec}) // no ledger yet: every card is free
		out = append(out, n)
	}
	return out, nil
}
