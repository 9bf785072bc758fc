package simulated

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers/rdma"
)

const goodNode = `
  - name: node-a10g
    os: linux
    arch: amd64
    cpu: {vendor: AMD, model: "AMD EPYC 7R32", cores: 4}
    memory: 16Gi
    storage: 200Gi
    accelerators:
      - {vendor: nvidia, product: "NVIDIA A10G", count: 1, memory: 24Gi, cores: 10240, family: Ampere,
         computeCapability: "8.6", driverVersion: "580.159.03", runtimeVersion: "13.0"}
`

func TestParse(t *testing.T) {
	type want struct {
		nodes int
		err   string
	}
	cases := map[string]struct {
		reason string
		file   string
		want   want
	}{
		"Good": {
			reason: "A complete entry parses.",
			file:   "nodes:" + goodNode,
			want:   want{nodes: 1},
		},
		"Empty": {
			reason: "An empty file is an error, not an empty cluster.",
			file:   "  \n",
			want:   want{err: "inventory is empty"},
		},
		"NoNodes": {
			reason: "A file without nodes is an error.",
			file:   "nodes: []",
			want:   want{err: "nodes: at least one node is required"},
		},
		"UnknownField": {
			reason: "A misspelt field is reported rather than ignored.",
			file:   "nodes:" + strings.Replace(goodNode, "storage:", "storag:", 1),
			want:   want{err: `nodes[0]: cannot parse: unknown field "storag"`},
		},
		"RDMA": {
			reason: "RDMA NICs parse, InfiniBand by default.",
			file:   "nodes:" + goodNode + "    rdma: [{}, {linkLayer: Ethernet, down: true}]\n",
			want:   want{nodes: 1},
		},
		"UnknownLinkLayer": {
			reason: "An unknown link layer names the NIC and the known ones.",
			file:   "nodes:" + goodNode + "    rdma: [{linkLayer: Omnipath}]\n",
			want:   want{err: `nodes[0] (node-a10g): rdma[0].linkLayer: unknown link layer "Omnipath"; known: InfiniBand, Ethernet`},
		},
		"NegativeVirtualFunctions": {
			reason: "A NIC's virtual functions are a count between 0 and 127, and the error names the NIC.",
			file:   "nodes:" + goodNode + "    rdma: [{}, {virtualFunctions: -1}]\n",
			want:   want{err: `nodes[0] (node-a10g): rdma[1].virtualFunctions: -1 is not between 0 and 127`},
		},
		"UnknownVendor": {
			reason: "An unknown vendor names the entry, the field and the known vendors.",
			file:   "nodes:" + strings.Replace(goodNode, "vendor: nvidia", "vendor: acme", 1),
			want:   want{err: `nodes[0] (node-a10g): accelerators[0].vendor: unknown vendor "acme"; known vendors: amd, ascend`},
		},
		"VendorAlias": {
			reason: "A manufacturer's other spellings resolve to its key.",
			file:   "nodes:" + strings.Replace(goodNode, "vendor: nvidia", "vendor: NVIDIA", 1),
			want:   want{nodes: 1},
		},
		"ZeroCores": {
			reason: "A node needs CPU cores.",
			file:   "nodes:" + strings.Replace(goodNode, "cores: 4}", "cores: 0}", 1),
			want:   want{err: "nodes[0] (node-a10g): cpu.cores: must be a positive number, got 0"},
		},
		"BadName": {
			reason: "A node name must be a valid object name.",
			file:   "nodes:" + strings.Replace(goodNode, "name: node-a10g", "name: Node_A10G", 1),
			want:   want{err: `name: "Node_A10G" is not a valid node name`},
		},
		"DuplicateName": {
			reason: "Two entries cannot share a name.",
			file:   "nodes:" + goodNode + goodNode,
			want:   want{err: "nodes[1] (node-a10g): name: duplicates nodes[0]"},
		},
		"ZeroCount": {
			reason: "An accelerator entry needs a positive count.",
			file:   "nodes:" + strings.Replace(goodNode, "count: 1", "count: 0", 1),
			want:   want{err: "accelerators[0].count: must be a positive number, got 0"},
		},
		"BadMemory": {
			reason: "Memory must be a quantity.",
			file:   "nodes:" + strings.Replace(goodNode, "memory: 16Gi", "memory: lots", 1),
			want:   want{err: "nodes[0]: cannot parse: quantities must match"},
		},
		"MissingArch": {
			reason: "The arch is required; os defaults to linux.",
			file:   "nodes:" + strings.Replace(goodNode, "    arch: amd64\n", "", 1),
			want:   want{err: "nodes[0] (node-a10g): arch: required"},
		},
		"BadVersion": {
			reason: "Versions become label values, so they must be label-safe.",
			file:   "nodes:" + strings.Replace(goodNode, `driverVersion: "580.159.03"`, `driverVersion: "580 beta"`, 1),
			want:   want{err: `nodes[0] (node-a10g): accelerators[0].driverVersion: "580 beta" may hold only`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inv, err := Parse([]byte(tc.file))
			got := want{}
			if err != nil {
				got.err = err.Error()
			} else {
				got.nodes = len(inv.Nodes)
			}
			if tc.want.err != "" && strings.Contains(got.err, tc.want.err) {
				got.err = tc.want.err
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nParse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestLoadExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/clusters/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example inventories found: %v", err)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("Load(%s): %v", f, err)
		}
	}
}

func TestWalkthroughInventory(t *testing.T) {
	inv, err := Load("../../examples/clusters/walkthrough.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		Name  string
		Cores int64
		Cards int32
	}
	var got []node
	for _, n := range inv.Nodes {
		var cards int32
		for _, a := range n.Accelerators {
			cards += a.Count
		}
		got = append(got, node{n.Name, n.CPU.Cores, cards})
	}
	want := []node{{"node-cpu", 16, 0}, {"node-a10g", 4, 1}, {"node-t4-a", 4, 1}, {"node-t4-b", 48, 4}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the walkthrough's four nodes\nLoad(...): -want, +got:\n%s", diff)
	}
}

func TestRDMA(t *testing.T) {
	inv, err := Parse([]byte("nodes:" + goodNode + "    rdma: [{virtualFunctions: 2}, {linkLayer: Ethernet, down: true}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []rdma.Device{
		{Name: "mlx5_0", LinkLayer: "InfiniBand", Active: true, Verbs: []string{"uverbs0"}},
		{Name: "mlx5_1", LinkLayer: "Ethernet", Verbs: []string{"uverbs1"}},
		{Name: "mlx5_2", LinkLayer: "InfiniBand", Active: true, Verbs: []string{"uverbs2"}, Virtual: true},
		{Name: "mlx5_3", LinkLayer: "InfiniBand", Active: true, Verbs: []string{"uverbs3"}, Virtual: true},
	}
	if diff := cmp.Diff(want, New(inv.Nodes[0]).RDMA()); diff != "" {
		t.Errorf("The NICs named as the kernel names them, InfiniBand by default, the down one inactive, then their virtual functions'.\nRDMA(): -want, +got:\n%s", diff)
	}
}
