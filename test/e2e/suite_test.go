// Package e2e is the end-to-end suite, a Ginkgo suite as Kueue's are: the walkthrough's four nodes run as real
// nodes (a kubelet v1.36.3 with containerd each, their hardware simulated) on a real control plane, with the
// product installed as a user installs it, by helm install of the chart with the test values of real nodes.
// The specs follow the seed walkthrough command by command and check the rest of the chain, its faults and
// its high availability there, acting on the product's Pods as an operator would. Every spec starts from
// Step 1 and leaves the cluster as it found it.
package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	suite = e2esuite.StartOnRealNodes("walkthrough.yaml", func(c *localcluster.Config) {
		// A Setting seeded from the worker's environment (settings_test.go).
		c.ChartValues = append(c.ChartValues, "worker.extraEnv[0].name=GPUSTACK_INSTANCE_SSH_SERVER_IMAGE",
			"worker.extraEnv[0].value="+sshImageFromEnv)
	})
	cluster, k, inv = suite.Cluster, suite.Client, suite.Inventory
})

// Every spec starts from the walkthrough's Step 1 (the four nodes composed into three pools) with the chart's
// two worker replicas ready and one leading, whatever ran before it: specs run in random order, and a spec
// before may have killed a replica.
var _ = BeforeEach(func() {
	eventually(2*time.Minute, func() (bool, string) {
		ready := kubectl("-n", localcluster.ChartNamespace, "get", "deployment", "gpustack-operator-worker", "-o", "jsonpath={.status.readyReplicas}")
		pod, err := leaderPod()
		return ready == "2" && err == nil && leading(pod), fmt.Sprintf("%s worker replicas ready; the Lease's holder %q leads: %v", ready, pod, err)
	})
	waitTable(step1Types, "get", "instancetype")
	// The Workloads of a spec's Instances outlive them a moment (Kueue's finalizer, the garbage collector); a
	// queue still counting them pending is not Step 1.
	eventually(2*time.Minute, func() (bool, string) {
		left := kubectl("get", "workloads", "-n", "default", "-o", "name")
		return left == "", "Workloads left by a spec before:\n" + left
	})
})

var _ = AfterSuite(func() { suite.Stop() })
