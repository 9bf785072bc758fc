// Package e2e is the end-to-end suite, a Ginkgo suite as Kueue's are: one local cluster (a real control plane,
// KWOK nodes from the walkthrough inventory, nfd-master, Kueue and the operator) for every spec, which follow the
// seed walkthrough command by command.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var (
	cluster *localcluster.Cluster
	k       client.Client
	inv     *simulated.Inventory
	dir     string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gpustack-operator end-to-end suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	bin, skip, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
		"kueue", "nfd-master", "gpustack-operator")
	Expect(err).NotTo(HaveOccurred())
	if skip != "" {
		Skip(skip)
	}
	inv, err = simulated.Load(testenv.Path("examples", "clusters", "walkthrough.yaml"))
	Expect(err).NotTo(HaveOccurred())
	dir, err = os.MkdirTemp("", "gpustack-e2e-")
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err = localcluster.Start(ctx, localcluster.Config{
		BinDir: bin, Dir: dir, Inventory: inv, CRDPaths: []string{testenv.Path("package", "crds")}, Progress: GinkgoWriter,
		Operator: filepath.Join(bin, "gpustack-operator"), PolicyPaths: []string{testenv.Path("policies", "cel")},
	})
	Expect(err).NotTo(HaveOccurred(), "cannot start the local cluster")
	k, err = client.New(cluster.RESTConfig, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
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

var _ = AfterSuite(func() {
	if cluster == nil {
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	Expect(stopAndCheck(dir)).To(Succeed())
})

// stopAndCheck stops the cluster and fails if any of its processes is left.
func stopAndCheck(dir string) error {
	pids, _ := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	var recorded []string
	for _, p := range pids {
		b, _ := os.ReadFile(p)
		recorded = append(recorded, strings.TrimSpace(string(b)))
	}
	if err := cluster.Stop(); err != nil {
		return errors.Wrap(err, "cannot stop the local cluster")
	}
	for _, pid := range recorded {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err == nil && !strings.Contains(string(stat), ") Z") {
			return errors.Errorf("process %s of the local cluster still runs after Stop", pid)
		}
	}
	return nil
}
