// Package deviceplugins is the end-to-end suite of "what Kueue admits, the device plugins grant": a local cluster of
// the nine vendors' cards (examples/clusters/nine-vendors.yaml) where every node runs its whole device agent,
// plugins included, and a stand-in for its kubelet's device manager allocates each bound Pod's devices through
// them before KWOK starts the Pod, as a kubelet does. Each vendor is asked every kind of request it advertises,
// through the real Kueue and the per-card check, and each must be granted.
package deviceplugins

import (
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
)

var suite *e2esuite.Suite

func TestDevicePlugins(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gpustack-operator device plugins end-to-end suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	// Jobs' Pods keep running until deleted, so what they were granted can be read.
	suite = e2esuite.Start("nine-vendors.yaml", func(c *localcluster.Config) { c.DevicePlugins, c.KeepJobsRunning = true, true })
})

var _ = AfterSuite(func() { suite.Stop() })
