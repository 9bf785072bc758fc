// Package e2esuite is what the end-to-end suites share: a local cluster started from an inventory file with
// the operator running, kubectl against it, and polling that fails a spec with the last thing it saw. Its
// functions fail the running Ginkgo spec (or suite) on error, as Gomega assertions do.
package e2esuite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

// Suite is one local cluster of a suite.
type Suite struct {
	// Cluster is the running local cluster.
	Cluster *localcluster.Cluster
	// Client talks to its API server with the project's scheme.
	Client client.Client
	// Inventory is the inventory it was started from.
	Inventory *simulated.Inventory
	// Dir holds its files; Stop removes it.
	Dir string
}

// Start starts a local cluster of the inventory file examples/clusters/<file> with the operator and the CEL
// admission policies, or skips the suite when the binaries are not built; configure may change the cluster's
// configuration before it starts.
func Start(file string, configure ...func(*localcluster.Config)) *Suite {
	ginkgo.GinkgoHelper()
	bin, skip, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
		"kueue", "nfd-master", "gpustack-operator")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if skip != "" {
		ginkgo.Skip(skip)
	}
	s := &Suite{}
	s.Inventory, err = simulated.Load(testenv.Path("examples", "clusters", file))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	s.Dir, err = os.MkdirTemp("", "gpustack-e2e-")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := localcluster.Config{
		BinDir: bin, Dir: s.Dir, Inventory: s.Inventory, CRDPaths: []string{testenv.Path("package", "crds")}, Progress: ginkgo.GinkgoWriter,
		Operator: filepath.Join(bin, "gpustack-operator"), PolicyPaths: []string{testenv.Path("policies", "cel")},
	}
	for _, f := range configure {
		f(&cfg)
	}
	s.Cluster, err = localcluster.Start(ctx, cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "cannot start the local cluster")
	s.Client, err = client.New(s.Cluster.RESTConfig, client.Options{Scheme: scheme.New()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return s
}

// Stop stops the cluster, fails if any of its processes is left, and removes its files.
func (s *Suite) Stop() {
	ginkgo.GinkgoHelper()
	if s == nil || s.Cluster == nil {
		return
	}
	defer func() { _ = os.RemoveAll(s.Dir) }()
	gomega.Expect(stopAndCheck(s.Cluster, s.Dir)).To(gomega.Succeed())
}

func stopAndCheck(c *localcluster.Cluster, dir string) error {
	pids, _ := filepath.Glob(filepath.Join(dir, "pids", "*.pid"))
	var recorded []string
	for _, p := range pids {
		b, _ := os.ReadFile(p)
		recorded = append(recorded, strings.TrimSpace(string(b)))
	}
	if err := c.Stop(); err != nil {
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

// Kubectl runs kubectl against the cluster and fails the spec when it fails.
func (s *Suite) Kubectl(args ...string) string {
	ginkgo.GinkgoHelper()
	out, err := testenv.Kubectl(s.Cluster.Kubeconfig, args...)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return out
}

// KubectlTable runs kubectl against the cluster and splits its table into cells.
func (s *Suite) KubectlTable(args ...string) [][]string {
	ginkgo.GinkgoHelper()
	return walkthrough.ParseTable(s.Kubectl(args...))
}

// WaitFor polls cond until it holds, failing the spec with cond's last message after timeout.
func WaitFor(timeout time.Duration, cond func() (bool, string)) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(func(g gomega.Gomega) {
		ok, msg := cond()
		g.Expect(ok).To(gomega.BeTrue(), msg)
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(gomega.Succeed())
}
