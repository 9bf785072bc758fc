// Package multicluster is the end-to-end suite of the worker-gateway across clusters: a manager local cluster
// runs the worker-gateway behind its API server's aggregation layer, and two member local clusters (the
// walkthrough's nodes and the MIG cluster) run the operator; kubectl on the manager reads the members' pools,
// aggregated, and sees a member that stops answering, until it answers again.
package multicluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.
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
	members["member-a"] = e2esuite.Start("walkthrough.yaml")
	members["member-b"] = e2esuite.Start("h100-mig.yaml")
	bin, skip, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kueue", "gpustack-operator")
	Expect(err).NotTo(HaveOccurred())
	if skip != "" {
		Skip(skip)
	}
	dir, err := os.MkdirTemp("", "gpustack-e2e-manager-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The manager holds no nodes: it runs the worker-gateway, the worker (which runs the Instances created there
	// as Pods) and Kueue, whose MultiKueue sends them to the members.
	manager, err = localcluster.Start(ctx, localcluster.Config{BinDir: bin, Dir: dir, CRDPaths: []string{testenv.Path("package", "crds")},
		Operator: filepath.Join(bin, "gpustack-operator"), NoNFD: true, Gateway: true, Progress: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred(), "cannot start the manager cluster")
	managerClient, err = client.New(manager.RESTConfig, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	for name, m := range members {
		Expect(manager.AddMember(ctx, name, m.Cluster)).To(Succeed())
	}
})

var _ = AfterSuite(func() {
	if manager != nil {
		Expect(manager.Stop()).To(Succeed())
	}
	for _, m := range members {
		m.Stop()
	}
})
