// Package walkthrough_test follows the seed walkthrough command by command on the walkthrough's four nodes run
// as real nodes (a kubelet v1.35.4 with containerd each, their hardware simulated), with the product installed
// as a user installs it: helm install of the chart, with the test values of real nodes. Every spec starts from
// Step 1 and leaves the cluster as it found it.
package walkthrough_test

import (
	"fmt"
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

func TestWalkthrough(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "the walkthrough on real nodes")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	suite = e2esuite.StartOnRealNodes("walkthrough.yaml")
	cluster, k, inv = suite.Cluster, suite.Client, suite.Inventory
})

// Every spec starts from the walkthrough's Step 1 (the four nodes composed into three pools) with a worker
// leading, whatever ran before it: specs run in random order, and each leaves the cluster as it found it.
var _ = BeforeEach(func() {
	eventually(time.Minute, func() (bool, string) {
		url, err := leaderMetricsURL()
		return err == nil, fmt.Sprintf("no worker leads: %v (%s)", err, url)
	})
	waitTable(step1Types, "get", "instancetype")
})

var _ = AfterSuite(func() { suite.Stop() })
