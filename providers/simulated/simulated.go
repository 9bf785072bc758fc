// Package simulated is the device backend of the local cluster: it reports the accelerators an inventory file
// gives a node, as a real backend would report detected hardware.
package simulated

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/nvidia"
	"github.com/gpustack/gpustack-operator/providers/rdma"
)

// Provider reports one inventory node's accelerators.
type Provider struct {
	node Node
}

// New returns the backend of one inventory node.
func New(node Node) *Provider { return &Provider{node: node} }

// Name names the backend.
func (p *Provider) Name() string { return "simulated" }

// Detect returns the node's cards, indexed in inventory order, with UUIDs stable across runs; cards in MIG
// mode with their product's profiles, as NVML reports them.
func (p *Provider) Detect(context.Context) ([]providers.Device, error) {
	var out []providers.Device
	var index int32
	for _, a := range p.node.Accelerators {
		var partitions []providers.Partition
		if a.PartitionMode == "mig" {
			partitions, _ = nvidia.ProductProfiles(a.Product)
		}
		for i := int32(0); i < a.Count; i++ {
			out = append(out, providers.Device{Partitions: partitions,
				Manufacturer: a.Vendor, Product: a.Product, UUID: uuidFor(p.node.Name, index),
				Index: index, MemoryMiB: a.Memory.Value() >> 20, Cores: a.Cores, Family: a.Family,
				ComputeCapability: a.ComputeCapability, DriverVersion: a.DriverVersion, RuntimeVersion: a.RuntimeVersion,
			})
			index++
		}
	}
	return out, nil
}

// RDMA returns the node's RDMA devices as the kernel would name them, mlx5_<i> with the verbs device uverbs<i>,
// active unless their NIC's port is down: the NICs' own in inventory order, then each NIC's virtual functions'
// in the same order.
func (p *Provider) RDMA() []rdma.Device {
	var out []rdma.Device
	device := func(n RDMANIC, virtual bool) rdma.Device {
		i := len(out)
		return rdma.Device{Name: fmt.Sprintf("mlx5_%d", i), LinkLayer: n.LinkLayer, Active: !n.Down,
			Verbs: []string{fmt.Sprintf("uverbs%d", i)}, Virtual: virtual}
	}
	for _, n := range p.node.RDMA {
		out = append(out, device(n, false))
	}
	for _, n := range p.node.RDMA {
		for range n.VirtualFunctions {
			out = append(out, device(n, true))
		}
	}
	return out
}

// uuidFor derives a GPU-style UUID from the node name and card index.
func uuidFor(node string, index int32) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", node, index)))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
