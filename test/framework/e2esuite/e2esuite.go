// Package e2esuite is what the end-to-end suites share: a local cluster started from an inventory file with
// the operator running, kubectl against it, and polling that fails a spec with the last thing it saw. Its
// functions fail the running Ginkgo spec (or suite) on error, as Gomega assertions do.
package e2esuite

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/google/go-cmp/cmp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/pools"
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

// newSuite loads the inventory file examples/clusters/<file> and makes the suite's directory.
func newSuite(file string) *Suite {
	ginkgo.GinkgoHelper()
	s := &Suite{}
	var err error
	s.Inventory, err = simulated.Load(testenv.Path("examples", "clusters", file))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	s.Dir, err = os.MkdirTemp("", "gpustack-e2e-")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return s
}

// start starts the suite's cluster and its client.
func (s *Suite) start(ctx context.Context, cfg localcluster.Config) {
	ginkgo.GinkgoHelper()
	var err error
	s.Cluster, err = localcluster.Start(ctx, cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "cannot start the local cluster")
	s.Client, err = client.New(s.Cluster.RESTConfig, client.Options{Scheme: scheme.New()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}

// StartOnRealNodes starts the nodes of the inventory file examples/clusters/<file> as real nodes (a kubelet
// with containerd each) and installs the product as a user does, with helm install of the chart and the test
// values of real nodes; the operator's image is testenv.OperatorImage's. configure may change the cluster's
// configuration before it starts (a cluster beside others takes its own FirstNodeIndex). It skips the suite
// when the binaries are not built, and fails it when the image is missing.
func StartOnRealNodes(file string, configure ...func(*localcluster.Config)) *Suite {
	ginkgo.GinkgoHelper()
	bin, skip, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
		"kubelet", "kube-proxy", "helm", "localcluster")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if skip != "" {
		ginkgo.Skip(skip)
	}
	image, err := testenv.OperatorImage()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	s := newSuite(file)
	// A cold machine's nodes take minutes to import their images before helm install --wait sees the Pods run.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := localcluster.Config{BinDir: bin, Dir: s.Dir, Inventory: s.Inventory,
		Progress: ginkgo.GinkgoWriter, Chart: testenv.Path("package", "helm", "gpustack-operator"),
		NodeCommand: filepath.Join(bin, "localcluster"), RealNodes: true, Images: []string{image}}
	for _, f := range configure {
		f(&cfg)
	}
	s.start(ctx, cfg)
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

// WaitPools waits until, for every accelerator product of the inventory, an InstanceType of that product is
// Active: the product has discovered, profiled and composed every node's cards, which it does after helm
// install returns. A suite whose specs each expect their pool ready calls it once, with the time a loaded
// machine takes for that, so that no spec spends its own budget on the cluster's start.
func (s *Suite) WaitPools(timeout time.Duration) {
	ginkgo.GinkgoHelper()
	start := time.Now()
	var want []string
	for _, n := range s.Inventory.Nodes {
		for _, a := range n.Accelerators {
			want = append(want, pools.ProductLabel(a.Product))
		}
	}
	WaitFor(timeout, func() (bool, string) {
		var list workerv1.InstanceTypeList
		if err := s.Client.List(context.Background(), &list); err != nil {
			return false, err.Error()
		}
		var active, seen []string
		for _, it := range list.Items {
			seen = append(seen, fmt.Sprintf("%s (%s, %s)", it.Name, it.Spec.Product, it.Status.Phase))
			if it.Status.Phase == workerv1.InstanceTypeActive {
				active = append(active, it.Spec.Product)
			}
		}
		var missing []string
		for _, p := range want {
			if !slices.Contains(active, p) && !slices.Contains(missing, p) {
				missing = append(missing, p)
			}
		}
		return len(missing) == 0, fmt.Sprintf("no Active pool of %s; InstanceTypes: %s", strings.Join(missing, ", "), strings.Join(seen, ", "))
	})
	fmt.Fprintf(ginkgo.GinkgoWriter, ">> every product's pool Active %s after the install\n", time.Since(start).Round(100*time.Millisecond))
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

// WaitTable waits until kubectl prints the table.
func (s *Suite) WaitTable(want [][]string, args ...string) {
	ginkgo.GinkgoHelper()
	// Generous: on a loaded 2-core machine a recompute can queue behind the other components.
	WaitFor(2*time.Minute, func() (bool, string) {
		diff := cmp.Diff(want, s.KubectlTable(args...))
		return diff == "", fmt.Sprintf("kubectl %s: -want, +got:\n%s", strings.Join(args, " "), diff)
	})
}

// Column returns a one-column table.
func Column(header string, rows ...string) [][]string {
	out := [][]string{{header}}
	for _, r := range rows {
		out = append(out, []string{r})
	}
	return out
}

// InstancePhase reads an Instance's phase and message in the default namespace.
func (s *Suite) InstancePhase(name string) string {
	ginkgo.GinkgoHelper()
	return s.Kubectl("get", "instance", name, "-n", "default", "-o", "jsonpath={.status.phase}: {.status.phaseMessage}")
}

// WaitPhase waits until the Instance's phase and message start with want.
func (s *Suite) WaitPhase(name, want string) {
	ginkgo.GinkgoHelper()
	WaitFor(2*time.Minute, func() (bool, string) {
		got := s.InstancePhase(name)
		return strings.HasPrefix(got, want), fmt.Sprintf("%s: %q, want %q...", name, got, want)
	})
}

// Scrape reads the gauge of the series with these labels from a Prometheus endpoint.
func Scrape(url, name string, want map[string]string) float64 {
	ginkgo.GinkgoHelper()
	resp, err := http.Get(url)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(families).To(gomega.HaveKey(name))
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			return m.GetGauge().GetValue()
		}
	}
	ginkgo.Fail(fmt.Sprintf("no %s%v at %s", name, want, url))
	return 0
}
