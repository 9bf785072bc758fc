// Package deviceplugins is the end-to-end suite of "what Kueue admits, the device plugins grant": a local cluster
// of the nine vendors' cards (examples/clusters/nine-vendors.yaml) run as real nodes, with the product installed
// by helm install of the chart, where each node's device manager registers its plugins with the node's real
// kubelet, and the kubelet's device manager allocates each bound Pod's devices through them before it starts
// the Pod's containers. Each vendor is asked every kind of request it advertises, through the real Kueue and the
// per-card check, and each must be granted: read back from inside the running containers.
package deviceplugins

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
)

var suite *e2esuite.Suite

func TestDevicePlugins(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gpustack-operator device plugins end-to-end suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	suite = e2esuite.StartOnRealNodes("nine-vendors.yaml")
	// Twelve nodes discovered and composed on a loaded 2-core machine: minutes, seen past 2 on CI.
	suite.WaitPools(6 * time.Minute)
})

var _ = AfterSuite(func() { suite.Stop() })
