// Package e2e is the end-to-end suite, a Ginkgo suite as Kueue's are: one local cluster (a real control plane,
// KWOK nodes from the walkthrough inventory, nfd-master, Kueue and the operator) for every spec, which follow the
// seed walkthrough command by command.
package e2e

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

var (
	suite   *e2esuite.Suite
	cluster *localcluster.Cluster
	k       client.Client
	inv     *simulated.Inventory
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gpustack-operator end-to-end suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	suite = e2esuite.Start("walkthrough.yaml")
	cluster, k, inv = suite.Cluster, suite.Client, suite.Inventory
})

// Every spec starts from the walkthrough's Step 1 (the four nodes composed into three pools), whatever ran
// before it: specs run in random order, and each leaves the cluster as it found it.
var _ = BeforeEach(func() {
	// A spec before may have restarted the worker: it leads again once the Lease it held expires.
	eventually(time.Minute, func() (bool, string) {
		return leading(localcluster.ComponentWorker), "the worker does not lead"
	})
	waitTable(step1Types, "get", "instancetype")
})

var _ = AfterSuite(func() { suite.Stop() })
