// Package partitions is the end-to-end suite of hardware partitions: a local cluster of cards in MIG mode
// (examples/clusters/h100-mig.yaml: eight H100s on one node, one A100 80GB on another) run as real nodes whose
// stand-in NVIDIA driver makes MIG instances, with the product installed by helm install of the chart, where
// Instances ask for MIG profiles, the agents make them, and the PT view follows them.
package partitions

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

var suite *e2esuite.Suite

func TestPartitions(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gpustack-operator partitions end-to-end suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	suite = e2esuite.StartOnRealNodes("h100-mig.yaml")
})

var _ = AfterSuite(func() { suite.Stop() })

// views returns an InstanceType's ACCELERATOR(EX/SH/SL/PT) column as kubectl prints it; empty while the
// InstanceType does not exist.
func views(instanceType string) string {
	out, err := testenv.Kubectl(suite.Cluster.Kubeconfig, "get", "instancetype", instanceType)
	if err != nil {
		return ""
	}
	for _, row := range walkthrough.ParseTable(out) {
		if len(row) > 3 && row[0] == instanceType {
			return row[3]
		}
	}
	return ""
}

// waitViews waits until the InstanceType's views read want.
func waitViews(instanceType, want string) {
	GinkgoHelper()
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		got := views(instanceType)
		return got == want, fmt.Sprintf("%s: views %q, want %q", instanceType, got, want)
	})
}

// phase reads an Instance's "phase: message".
func phase(name string) string {
	GinkgoHelper()
	return suite.Kubectl("get", "instance", name, "-n", "default", "-o", "jsonpath={.status.phase}: {.status.phaseMessage}")
}

// waitPhase waits until the Instance's "phase: message" starts with want.
func waitPhase(name, want string) {
	GinkgoHelper()
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		got := phase(name)
		return strings.HasPrefix(got, want), fmt.Sprintf("%s: %q, want %q...", name, got, want)
	})
}
