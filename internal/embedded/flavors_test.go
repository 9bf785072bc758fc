package embedded_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/functions/xrs"
	"github.com/gpustack/gpustack-operator/internal/embedded"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// composed is what a case checks: object names by kind, and the warnings.
type composed struct {
	ResourceFlavors     []string
	InstanceTypeFlavors []string
	InstanceTypes       []string
	Warnings            int
}

func nodesOf(t *testing.T, file string) []pools.Node {
	t.Helper()
	var inv *simulated.Inventory
	var err error
	if strings.HasSuffix(file, ".yaml") {
		inv, err = simulated.Load(testenv.Path("examples", "clusters", file))
	} else {
		inv, err = simulated.Parse([]byte(file))
	}
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := simulated.Nodes(context.Background(), inv)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

const mixedPlatforms = `
nodes:
  - {name: x86-cpu, arch: amd64, cpu: {vendor: AMD, model: "AMD EPYC 7R13 Processor", cores: 16}, memory: 32Gi, storage: 100Gi}
  - {name: arm-cpu, arch: arm64, cpu: {vendor: ARM, model: "Neoverse-N1", cores: 64}, memory: 128Gi, storage: 100Gi}
  - name: arm-gh200
    arch: arm64
    cpu: {vendor: ARM, model: "Neoverse-V2", cores: 72}
    memory: 480Gi
    storage: 100Gi
    accelerators: [{vendor: nvidia, product: "NVIDIA GH200 480GB", count: 1, memory: 96Gi}]
  - name: x86-ascend
    arch: amd64
    cpu: {vendor: Intel, model: "Intel(R) Xeon(R) Gold 6348", cores: 56}
    memory: 512Gi
    storage: 100Gi
    accelerators: [{vendor: ascend, product: "Ascend 910B", count: 8, memory: 64Gi}]
`

const cpuOnly = `
nodes:
  - {name: a, arch: amd64, cpu: {vendor: Intel, model: "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", cores: 8}, memory: 32Gi, storage: 100Gi}
  - {name: b, arch: amd64, cpu: {vendor: Intel, model: "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", cores: 8}, memory: 32Gi, storage: 100Gi}
`

func TestFlavorsPipeline(t *testing.T) {
	defaults := xrs.DefaultFunctionSettings()
	aware := xrs.DefaultFunctionSettings()
	aware.AwareCPUManufacturer = true
	notDerived := xrs.DefaultFunctionSettings()
	notDerived.DerivedFromNode = false
	notMixed := xrs.DefaultFunctionSettings()
	notMixed.MixedOnNode = false
	badNode := func(nodes []pools.Node) []pools.Node {
		return append(nodes, pools.Node{Name: "broken", OS: "linux", CPU: pools.CPU{Key: "x"}},
			pools.Node{Name: "negative", OS: "linux", Arch: "amd64", Managed: true, CPU: pools.CPU{Key: "y", Cores: 1},
				Groups: []pools.Group{{Key: "nvidia-x", Manufacturer: "nvidia", Count: -4}}})
	}
	type args struct {
		nodes    func(*testing.T) []pools.Node
		settings xrs.FunctionSettings
	}
	cases := map[string]struct {
		reason string
		args   args
		want   composed
	}{
		"Walkthrough": {
			reason: "Step 1: seven flavors, a collapsed catalog and three derived pools.",
			args:   args{nodes: func(t *testing.T) []pools.Node { return nodesOf(t, "walkthrough.yaml") }, settings: defaults},
			want: composed{
				ResourceFlavors: []string{
					"gpustack--amd-epyc-7r13-linux-amd64-16c", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d",
					"gpustack--amd-epyc-7r32-linux-amd64-4c", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
					"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
					"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c",
				},
				InstanceTypeFlavors: []string{"gpustack--generic", "gpustack--nvidia-a10g", "gpustack--nvidia-tesla-t4"},
				InstanceTypes: []string{"gpustack--generic-linux-amd64", "gpustack--nvidia-a10g-linux-amd64",
					"gpustack--nvidia-tesla-t4-linux-amd64"},
			},
		},
		"WalkthroughAware": {
			reason: "Step 5: the same seven flavors; the catalog and the pools split by CPU key.",
			args:   args{nodes: func(t *testing.T) []pools.Node { return nodesOf(t, "walkthrough.yaml") }, settings: aware},
			want: composed{
				ResourceFlavors: []string{
					"gpustack--amd-epyc-7r13-linux-amd64-16c", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d",
					"gpustack--amd-epyc-7r32-linux-amd64-4c", "gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
					"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
					"gpustack--intel-xeon-platinum-8259cl-linux-amd64-48c", "gpustack--intel-xeon-platinum-8259cl-linux-amd64-4c",
				},
				InstanceTypeFlavors: []string{"gpustack--amd-epyc-7r13", "gpustack--amd-epyc-7r32",
					"gpustack--amd-epyc-7r32--nvidia-a10g", "gpustack--intel-xeon-platinum-8259cl",
					"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4"},
				InstanceTypes: []string{"gpustack--amd-epyc-7r13-linux-amd64",
					"gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64", "gpustack--amd-epyc-7r32-linux-amd64",
					"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64",
					"gpustack--intel-xeon-platinum-8259cl-linux-amd64"},
			},
		},
		"Empty": {
			reason: "An empty cluster composes nothing.",
			args:   args{nodes: func(*testing.T) []pools.Node { return nil }, settings: defaults},
			want:   composed{},
		},
		"CPUOnly": {
			reason: "Two identical CPU nodes share one flavor; the generic pool covers them.",
			args:   args{nodes: func(t *testing.T) []pools.Node { return nodesOf(t, cpuOnly) }, settings: defaults},
			want: composed{
				ResourceFlavors:     []string{"gpustack--intel-xeon-platinum-8259cl-linux-amd64-8c"},
				InstanceTypeFlavors: []string{"gpustack--generic"},
				InstanceTypes:       []string{"gpustack--generic-linux-amd64"},
			},
		},
		"MixedPlatforms": {
			reason: "Each os/arch gets its own flavors and pools; the catalog is platform-agnostic.",
			args:   args{nodes: func(t *testing.T) []pools.Node { return nodesOf(t, mixedPlatforms) }, settings: defaults},
			want: composed{
				ResourceFlavors: []string{
					"gpustack--amd-epyc-7r13-linux-amd64-16c", "gpustack--arm-neoverse-n1-linux-arm64-64c",
					"gpustack--arm-neoverse-v2--nvidia-gh200-480gb-linux-arm64-1d", "gpustack--arm-neoverse-v2-linux-arm64-72c",
					"gpustack--intel-xeon-gold-6348--ascend-910b-linux-amd64-8d", "gpustack--intel-xeon-gold-6348-linux-amd64-56c",
				},
				InstanceTypeFlavors: []string{"gpustack--ascend-910b", "gpustack--generic", "gpustack--nvidia-gh200-480gb"},
				InstanceTypes: []string{"gpustack--ascend-910b-linux-amd64", "gpustack--generic-linux-amd64",
					"gpustack--generic-linux-arm64", "gpustack--nvidia-gh200-480gb-linux-arm64"},
			},
		},
		"NotMixedOnNode": {
			reason: "With instance-type-mixed-on-node off, accelerated nodes feed no CPU flavor.",
			args:   args{nodes: func(t *testing.T) []pools.Node { return nodesOf(t, "walkthrough.yaml") }, settings: notMixed},
			want: composed{
				ResourceFlavors: []string{
					"gpustack--amd-epyc-7r13-linux-amd64-16c", "gpustack--amd-epyc-7r32--nvidia-a10g-linux-amd64-1d",
					"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-1d",
					"gpustack--intel-xeon-platinum-8259cl--nvidia-tesla-t4-linux-amd64-4d",
				},
				InstanceTypeFlavors: []string{"gpustack--generic", "gpustack--nvidia-a10g", "gpustack--nvidia-tesla-t4"},
				InstanceTypes: []string{"gpustack--generic-linux-amd64", "gpustack--nvidia-a10g-linux-amd64",
					"gpustack--nvidia-tesla-t4-linux-amd64"},
			},
		},
		"NotDerived": {
			reason: "With derivation off, no InstanceType is composed.",
			args:   args{nodes: func(t *testing.T) []pools.Node { return nodesOf(t, cpuOnly) }, settings: notDerived},
			want: composed{
				ResourceFlavors:     []string{"gpustack--intel-xeon-platinum-8259cl-linux-amd64-8c"},
				InstanceTypeFlavors: []string{"gpustack--generic"},
			},
		},
		"BadNodes": {
			reason: "Nodes the function cannot place are warned about and left out; the rest is composed.",
			args:   args{nodes: func(t *testing.T) []pools.Node { return badNode(nodesOf(t, cpuOnly)) }, settings: defaults},
			want: composed{
				ResourceFlavors:     []string{"gpustack--intel-xeon-platinum-8259cl-linux-amd64-8c"},
				InstanceTypeFlavors: []string{"gpustack--generic"},
				InstanceTypes:       []string{"gpustack--generic-linux-amd64"},
				Warnings:            2,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, _, err := embedded.Flavors(context.Background(), xrs.Inventory(tc.args.nodes(t), tc.args.settings))
			if err != nil {
				t.Fatal(err)
			}
			got := composed{Warnings: len(out.Warnings)}
			for _, o := range out.Objects {
				switch o.GetKind() {
				case "ResourceFlavor":
					got.ResourceFlavors = append(got.ResourceFlavors, o.GetName())
				case "InstanceTypeFlavor":
					got.InstanceTypeFlavors = append(got.InstanceTypeFlavors, o.GetName())
				case "InstanceType":
					got.InstanceTypes = append(got.InstanceTypes, o.GetName())
				}
			}
			for _, s := range [][]string{got.ResourceFlavors, got.InstanceTypeFlavors, got.InstanceTypes} {
				sort.Strings(s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nembedded.Flavors(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
