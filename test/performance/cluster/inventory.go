package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpustack/gpustack-operator/providers/simulated"
)

// product is one accelerator product of the generated inventory, as its driver reports it.
type product struct {
	vendor, name, memory, family, capability string
	cores                                    int64
}

// products are twelve products of seven vendors and several sizes, so the cluster has twelve pools.
var products = []product{
	{"nvidia", "NVIDIA H100 80GB HBM3", "80Gi", "Hopper", "9.0", 16896},
	{"nvidia", "NVIDIA A100-SXM4-40GB", "40Gi", "Ampere", "8.0", 6912},
	{"nvidia", "NVIDIA A10G", "24Gi", "Ampere", "8.6", 10240},
	{"nvidia", "Tesla T4", "16Gi", "Turing", "7.5", 2560},
	{"nvidia", "NVIDIA L40S", "48Gi", "Ada", "8.9", 18176},
	{"nvidia", "NVIDIA H200", "141Gi", "Hopper", "9.0", 16896},
	{"amd", "AMD Instinct MI300X", "192Gi", "CDNA3", "9.4", 19456},
	{"ascend", "Ascend 910B", "64Gi", "Ascend910", "", 0},
	{"cambricon", "MLU370-X8", "48Gi", "MLU300", "", 0},
	{"hygon", "K100", "64Gi", "DCU", "", 0},
	{"metax", "MXC500", "64Gi", "MXC", "", 0},
	{"mthreads", "MTT S4000", "48Gi", "QY2", "", 0},
}

// cpus are the nodes' processors, so the pools span several CPU types.
var cpus = []simulated.CPU{
	{Vendor: "AMD", Model: "AMD EPYC 7R13 Processor", Cores: 48},
	{Vendor: "AMD", Model: "AMD EPYC 9654 96-Core Processor", Cores: 96},
	{Vendor: "Intel", Model: "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", Cores: 48},
	{Vendor: "Intel", Model: "Intel(R) Xeon(R) Platinum 8480C", Cores: 112},
}

// cardsPerNode is how many cards every generated node has.
const cardsPerNode = 8

// generate returns an inventory of n nodes with eight cards each: node i has product i mod 12 and CPU i mod 4.
func generate(n int) *simulated.Inventory {
	inv := &simulated.Inventory{Nodes: make([]simulated.Node, n)}
	for i := range inv.Nodes {
		p := products[i%len(products)]
		inv.Nodes[i] = simulated.Node{
			Name: fmt.Sprintf("node-%05d", i), OS: "linux", Arch: "amd64", CPU: cpus[i%len(cpus)],
			Memory: resource.MustParse("1Ti"), Storage: resource.MustParse("2Ti"),
			Accelerators: []simulated.Accelerators{{
				Vendor: p.vendor, Product: p.name, Count: cardsPerNode, Memory: resource.MustParse(p.memory),
				Cores: p.cores, Family: p.family, ComputeCapability: p.capability,
				DriverVersion: "580.159.03", RuntimeVersion: "13.0",
			}},
		}
	}
	return inv
}
