// Package multicluster is the end-to-end suite of the worker-gateway across clusters, each on real nodes with
// the product installed by helm install of the chart: a manager cluster (examples/clusters/manager.yaml) runs
// the worker-gateway behind its API server's aggregation layer, and two member clusters (the walkthrough's
// nodes and the MIG cluster) run the operator; kubectl on the manager reads the members' pools, aggregated, and
// sees a member that stops answering, until it answers again.
package multicluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var (
	manager *localcluster.Cluster
	// managerClient creates and reads on the manager what kubectl would.
	managerClient client.Client
	members       = map[string]*e2esuite.Suite{}
)

func TestMultiCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gpustack-operator multi-cluster end-to-end suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	// The three clusters' real nodes share the machine's bridge: each takes its own range of node indices.
	first := 1
	start := func(file string, values []string, settings map[string]string) *e2esuite.Suite {
		s := e2esuite.StartOnRealNodes(file, func(cfg *localcluster.Config) {
			cfg.FirstNodeIndex, cfg.ChartValues, cfg.Settings = first, values, settings
		})
		first += len(s.Inventory.Nodes)
		return s
	}
	members["member-a"] = start("walkthrough.yaml", localcluster.MemberChartValues, nil)
	members["member-b"] = start("h100-mig.yaml", localcluster.MemberChartValues, nil)
	// A restarted gateway waits 30s, not 2m, for the members' first answers: the outage spec outlasts it sooner.
	m := start("manager.yaml", slices.Concat(localcluster.ManagerChartValues, []string{"workerGateway.firstAnswerGrace=30s"}),
		localcluster.ManagerSettings)
	DeferCleanup(m.Stop)
	manager = m.Cluster
	var err error
	managerClient, err = client.New(manager.RESTConfig, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, m := range members {
		Expect(manager.AddMember(ctx, name, m.Cluster)).To(Succeed())
	}
})

var _ = AfterSuite(func() {
	for _, m := range members {
		m.Stop()
	}
})

// waitControllersReady waits until the Pods of the worker and of Kueue in the cluster of kubeconfig are Ready:
// after an outage of its API server, the cluster admits nothing before they are.
func waitControllersReady(kubeconfig string) {
	GinkgoHelper()
	// The chart's Kueue runs in the release's namespace.
	for _, selector := range []string{"app.kubernetes.io/component=worker", "control-plane=controller-manager"} {
		out, err := testenv.Kubectl(kubeconfig, "-n", localcluster.ChartNamespace, "wait", "pod", "-l", selector, "--for=condition=Ready", "--timeout=5m")
		Expect(err).NotTo(HaveOccurred(), out)
	}
}
