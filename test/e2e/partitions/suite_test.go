// Package partitions is the end-to-end suite of hardware partitions: a local cluster of cards in MIG mode
// (examples/clusters/h100-mig.yaml: eight H100s on one node, one A100 80GB on another) with the real Kueue and the
// operator, where Instances ask for MIG profiles and the PT view follows them.
package partitions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL reads as prose.
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL reads as prose.
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	"github.com/gpustack/gpustack-operator/providers/simulated"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

var (
	cluster *localcluster.Cluster
	k       client.Client
	dir     string
)

func TestPartitions(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "gpustack-operator partitions end-to-end suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(logr.Discard())
	bin, skip, err := testenv.BinDir("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
		"kueue", "nfd-master", "gpustack-operator")
	Expect(err).NotTo(HaveOccurred())
	if skip != "" {
		Skip(skip)
	}
	inv, err := simulated.Load(testenv.Path("examples", "clusters", "h100-mig.yaml"))
	Expect(err).NotTo(HaveOccurred())
	dir, err = os.MkdirTemp("", "gpustack-e2e-mig-")
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

var _ = AfterSuite(func() {
	if cluster == nil {
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	Expect(cluster.Stop()).To(Succeed())
})

// kubectl runs kubectl against the cluster and fails the spec when it fails.
func kubectl(args ...string) string {
	GinkgoHelper()
	out, err := testenv.Kubectl(cluster.Kubeconfig, args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// eventually polls cond until it holds, failing the spec with cond's last message after timeout.
func eventually(timeout time.Duration, cond func() (bool, string)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		ok, msg := cond()
		g.Expect(ok).To(BeTrue(), msg)
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// views returns an InstanceType's ACCELERATOR(EX/SH/SL/PT) column as kubectl prints it; empty while the
// InstanceType does not exist.
func views(instanceType string) string {
	out, err := testenv.Kubectl(cluster.Kubeconfig, "get", "instancetype", instanceType)
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
	eventually(2*time.Minute, func() (bool, string) {
		got := views(instanceType)
		return got == want, fmt.Sprintf("%s: views %q, want %q", instanceType, got, want)
	})
}

// waitPhase waits until the Instance's "phase: message" starts with want.
func waitPhase(name, want string) {
	GinkgoHelper()
	eventually(2*time.Minute, func() (bool, string) {
		got := kubectl("get", "instance", name, "-n", "default", "-o", "jsonpath={.status.phase}: {.status.phaseMessage}")
		return strings.HasPrefix(got, want), fmt.Sprintf("%s: %q, want %q...", name, got, want)
	})
}
