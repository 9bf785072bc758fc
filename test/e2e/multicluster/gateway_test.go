package multicluster

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

// aggregated is `kubectl get aggregatedinstancetypes` on the manager, parsed; nil while it fails.
func aggregated() ([][]string, string) {
	out, err := testenv.Kubectl(manager.Kubeconfig, "get", "aggregatedinstancetypes")
	if err != nil {
		return nil, out
	}
	return walkthrough.ParseTable(out), out
}

// waitAggregated waits until the manager's aggregate reads want, but for the rows of the types named in except.
func waitAggregated(want [][]string, except ...string) {
	GinkgoHelper()
	keep := func(rows [][]string) [][]string {
		return slices.DeleteFunc(slices.Clone(rows), func(row []string) bool { return len(row) > 0 && slices.Contains(except, row[0]) })
	}
	e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
		got, out := aggregated()
		return fmt.Sprint(keep(got)) == fmt.Sprint(keep(want)), "kubectl get aggregatedinstancetypes:\n" + out
	})
}

var header = []string{"NAME", "CLUSTERS", "ACCELERATOR(EX/SH/SL/PT)", "CPU", "TIERS", "INACTIVE"}

// Section 11's rules over the members' Step 1 tables: the CPU type both members have is tiered on its CPU view
// (member-b's 112 free cores on one node first, then member-a's 48) with remaining summed (144 + 72); each
// accelerated type is one member's alone.
var bothAnswer = [][]string{header,
	{"gpustack--generic-linux-amd64", "2/2", "0/0 0/0 0/0 0/0", "112/216", "2", ""},
	{"gpustack--nvidia-a100-sxm4-80gb-linux-amd64", "1/1", "0/0 0/0 0/0 1/7", "0/0", "1", ""},
	{"gpustack--nvidia-a10g-linux-amd64", "1/1", "1/1 1/10 100/100 0/0", "0/0", "1", ""},
	{"gpustack--nvidia-h100-80gb-hbm3-linux-amd64", "1/1", "0/0 0/0 0/0 1/56", "0/0", "1", ""},
	{"gpustack--nvidia-tesla-t4-linux-amd64", "1/1", "4/5 4/50 100/500 0/0", "0/0", "1", ""},
}

var _ = It("reads the members' pools, aggregated, with kubectl on the manager", func() {
	waitAggregated(bothAnswer)
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstancetypes", "-o", "name")
		return len(walkthrough.ParseTable("NAME\n"+out)) == 7, "kubectl get clusterinstancetypes -o name:\n" + out
	})
})
