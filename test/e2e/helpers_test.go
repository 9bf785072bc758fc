package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

// The seed's Step 1 tables, SH once-max as card counts (the newer reading; see docs/walkthrough.md, Step 1).
var (
	step1Types   = walkthrough.Step1Types
	step1Flavors = walkthrough.Step1Flavors
)

// kubectl runs kubectl against the cluster and fails the spec when it fails.
func kubectl(args ...string) string {
	GinkgoHelper()
	return suite.Kubectl(args...)
}

// kubectlTable runs kubectl against the cluster and splits its table into cells.
func kubectlTable(args ...string) [][]string {
	GinkgoHelper()
	return suite.KubectlTable(args...)
}

// eventually polls cond until it holds, failing the spec with cond's last message after timeout.
func eventually(timeout time.Duration, cond func() (bool, string)) {
	GinkgoHelper()
	e2esuite.WaitFor(timeout, cond)
}

// waitTable waits until kubectl prints the table.
func waitTable(want [][]string, args ...string) {
	GinkgoHelper()
	suite.WaitTable(want, args...)
}

// column returns a one-column table.
func column(header string, rows ...string) [][]string { return e2esuite.Column(header, rows...) }

// waitPhase waits until the Instance's phase and message start with want.
func waitPhase(name, want string) {
	GinkgoHelper()
	suite.WaitPhase(name, want)
}

// leaderPod is the worker replica that holds the worker's Lease, by its Pod's name (a replica's identity is its
// Pod's name, then an underscore).
func leaderPod() (string, error) {
	holder, err := testenv.Kubectl(cluster.Kubeconfig, "-n", localcluster.ChartNamespace, "get", "lease", "gpustack-operator-worker",
		"-o", "jsonpath={.spec.holderIdentity}")
	if err != nil {
		return "", errors.Wrap(err, "cannot read the worker's Lease")
	}
	if holder == "" {
		return "", errors.New("the worker's Lease has no holder")
	}
	pod, _, _ := strings.Cut(holder, "_")
	return pod, nil
}

// leaderMetricsURL is the metrics endpoint of the worker replica that holds the worker's Lease, which keeps the
// pools' gauges.
func leaderMetricsURL() (string, error) {
	pod, err := leaderPod()
	if err != nil {
		return "", err
	}
	return metricsURL(localcluster.ChartNamespace, pod)
}

// metricsURL is the metrics endpoint of a Pod: its address and its first container's port named metrics.
func metricsURL(namespace, pod string) (string, error) {
	addr, err := testenv.Kubectl(cluster.Kubeconfig, "-n", namespace, "get", "pod", pod, "-o",
		`jsonpath={.status.podIP}:{.spec.containers[0].ports[?(@.name=="metrics")].containerPort}`)
	if err != nil {
		return "", errors.Wrapf(err, "cannot read Pod %s/%s", namespace, pod)
	}
	if strings.HasPrefix(addr, ":") || strings.HasSuffix(addr, ":") {
		return "", errors.Errorf("Pod %s/%s has no address or no metrics port yet: %q", namespace, pod, addr)
	}
	return "http://" + addr + "/metrics", nil
}

// workerPods are the worker's replicas that run, by Pod name.
func workerPods() []string {
	GinkgoHelper()
	out := kubectl("-n", localcluster.ChartNamespace, "get", "pods", "-l", "app.kubernetes.io/component=worker",
		"--field-selector", "status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}")
	return strings.Fields(out)
}

// killPod deletes a Pod at once, without its grace period, as an operator does to a process that hangs: its
// containers are killed, and its controller makes a new one.
func killPod(namespace, pod string) {
	GinkgoHelper()
	kubectl("-n", namespace, "delete", "pod", pod, "--grace-period=0", "--force", "--wait=false")
}

// setManaged sets gpustack.ai/managed on a node's worker NodeFeature, as an administrator takes a node out of
// the pools ("false") and back ("true"); NFD carries it onto the node.
func setManaged(node, value string) {
	GinkgoHelper()
	kubectl("-n", localcluster.ChartNamespace, "patch", "nodefeature", node+"-gpustack-worker", "--type=merge",
		"-p", fmt.Sprintf(`{"spec":{"labels":{"gpustack.ai/managed":%q}}}`, value))
}

// deleteLabelled deletes the Instances a spec labelled e2e=label and waits for the walkthrough's Step 1 again.
func deleteLabelled(label string) {
	GinkgoHelper()
	deleteInstances(client.MatchingLabels{"e2e": label})
	waitTable(step1Types, "get", "instancetype")
}

// deleteInstances deletes the default namespace's Instances that match labels, again until none is left
// undeleted: the API server ends a collection delete at its request timeout (60 s), which 200 Instances through
// the admission chain can pass on a loaded machine, leaving the rest in place.
func deleteInstances(labels client.MatchingLabels) {
	GinkgoHelper()
	ctx := context.Background()
	Eventually(func() (int, error) {
		if err := k.DeleteAllOf(ctx, &workerv1.Instance{}, client.InNamespace("default"), labels); err != nil {
			return -1, err
		}
		var left workerv1.InstanceList
		if err := k.List(ctx, &left, client.InNamespace("default"), labels); err != nil {
			return -1, err
		}
		undeleted := 0
		for _, inst := range left.Items {
			if inst.DeletionTimestamp == nil {
				undeleted++
			}
		}
		return undeleted, nil
	}, 5*time.Minute, time.Second).Should(BeZero(), "Instances labelled %v not yet deleted", labels)
}

// poolMetric reads one view's gauge of an InstanceType from the leading worker's metrics.
func poolMetric(name, instanceType, view string) float64 {
	GinkgoHelper()
	url, err := leaderMetricsURL()
	Expect(err).NotTo(HaveOccurred())
	return e2esuite.Scrape(url, name, map[string]string{"instancetype": instanceType, "view": view})
}

// createAuthoredType creates Step 4's administrator-authored A10G type, deleted when the test ends.
func createAuthoredType() {
	GinkgoHelper()
	it := builders.MakeInstanceType("a10g-12c128g").Accelerated("nvidia-a10g").Unit("12", "128Gi").LocalStorage("200Gi").Obj()
	Expect(k.Create(context.Background(), it)).To(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), it) })
}

// sshKey writes a new Ed25519 key pair to dir/id_ed25519 and returns its authorized_keys line.
func sshKey(dir string) string {
	GinkgoHelper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	block, err := ssh.MarshalPrivateKey(priv, "e2e")
	Expect(err).NotTo(HaveOccurred())
	sshPub, err := ssh.NewPublicKey(pub)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "id_ed25519"), pem.EncodeToMemory(block), 0o600)).To(Succeed())
	return string(ssh.MarshalAuthorizedKey(sshPub))
}

// missingLines returns the lines of want that out does not hold.
func missingLines(out string, want []string) []string {
	have := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		have[strings.TrimRight(l, "\r")] = true
	}
	var missing []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	return missing
}
