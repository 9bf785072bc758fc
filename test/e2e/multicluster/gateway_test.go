package multicluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

// aggregated is `kubectl get aggregatedinstancetypes` on the manager, parsed; nil while it fails.
func aggregated() ([][]string, string) {
	out, err := testenv.Kubectl(manager.Kubeconfig, "get", "aggregatedinstancetypes")
	if err != nil {
		return nil, out
	}
	return walkthrough.ParseTable(out), out
}

// waitAggregated waits until the manager's aggregate reads want, but for the rows of the types named in except.
func waitAggregated(want [][]string, except ...string) {
	GinkgoHelper()
	keep := func(rows [][]string) [][]string {
		return slices.DeleteFunc(slices.Clone(rows), func(row []string) bool { return len(row) > 0 && slices.Contains(except, row[0]) })
	}
	e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
		got, out := aggregated()
		return fmt.Sprint(keep(got)) == fmt.Sprint(keep(want)), "kubectl get aggregatedinstancetypes:\n" + out
	})
}

var header = []string{"NAME", "CLUSTERS", "ACCELERATOR(EX/SH/SL/PT)", "CPU", "TIERS", "INACTIVE"}

// Section 11's rules over the members' Step 1 tables: the CPU type both members have is tiered on its CPU view
// (member-b's 112 free cores on one node first, then member-a's 48) with remaining summed (144 + 72); each
// accelerated type is one member's alone.
var bothAnswer = [][]string{header,
	{"gpustack--generic-linux-amd64", "2/2", "0/0 0/0 0/0 0/0", "112/216", "2", ""},
	{"gpustack--nvidia-a100-sxm4-80gb-linux-amd64", "1/1", "0/0 0/0 0/0 1/7", "0/0", "1", ""},
	{"gpustack--nvidia-a10g-linux-amd64", "1/1", "1/1 1/10 100/100 0/0", "0/0", "1", ""},
	{"gpustack--nvidia-h100-80gb-hbm3-linux-amd64", "1/1", "0/0 0/0 0/0 1/56", "0/0", "1", ""},
	{"gpustack--nvidia-tesla-t4-linux-amd64", "1/1", "4/5 4/50 100/500 0/0", "0/0", "1", ""},
}

var _ = It("reads the members' pools, aggregated, with kubectl on the manager, selected by label", func() {
	waitAggregated(bothAnswer)
	var all []string
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstancetypes", "-o", "name")
		all = strings.Fields(out)
		return len(all) == 6, "kubectl get clusterinstancetypes -o name:\n" + out
	})

	By("a label on member-a's T4 type selecting it alone among the members' types")
	a, selected := members["member-a"], "clusterinstancetype.gateway.gpustack.ai/member-a."+t4Type
	a.Kubectl("label", "instancetype", t4Type, "e2e-selected=yes")
	DeferCleanup(func() { _, _ = testenv.Kubectl(a.Cluster.Kubeconfig, "label", "instancetype", t4Type, "e2e-selected-") })
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		out, err := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstancetypes", "-l", "e2e-selected=yes", "-o", "name")
		served, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstancetypes", "member-a."+t4Type, "-o", "jsonpath={.metadata.labels}")
		member, _ := testenv.Kubectl(a.Cluster.Kubeconfig, "get", "instancetype", t4Type, "-o", "jsonpath={.metadata.labels}")
		return err == nil && strings.TrimSpace(out) == selected,
			fmt.Sprintf("kubectl get clusterinstancetypes -l e2e-selected=yes -o name: %v\n%s\nthe served type's labels: %s; member-a's: %s", err, out, served, member)
	})
	// Each gateway replica reads the members on its own, and kube-apiserver sends each request to either: the one
	// that answers next may not have read the label yet.
	others := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == selected })
	slices.Sort(others)
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		out, err := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstancetypes", "-l", "e2e-selected!=yes", "-o", "name")
		got := strings.Fields(out)
		slices.Sort(got)
		return err == nil && slices.Equal(got, others),
			fmt.Sprintf("kubectl get clusterinstancetypes -l e2e-selected!=yes -o name: %v\n%s\nwant the members' other types %v", err, out, others)
	})
	_, err := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstancetypes", "--field-selector", "spec.os=linux")
	Expect(err).To(MatchError(ContainSubstring("field label not supported: spec.os")))
})

// Section 11's references through the chart's member role: each member's volume types (projected from its
// StorageClasses) and member-a's SSH key and pull secret, listed on the manager by name; neither the key nor the
// password reaches the manager, and both members' entries say everything was read.
var _ = It("names the members' volume types, SSH keys and pull secrets on the manager, never their data", func() {
	const password = "e2e-never-served"
	a := members["member-a"]
	apply := func(yaml string) {
		GinkgoHelper()
		path := filepath.Join(GinkgoT().TempDir(), "obj.yaml")
		Expect(os.WriteFile(path, []byte(yaml), 0o600)).To(Succeed())
		a.Kubectl("apply", "-f", path)
		DeferCleanup(func() { _, _ = testenv.Kubectl(a.Cluster.Kubeconfig, "delete", "-f", path, "--ignore-not-found") })
	}
	apply(`apiVersion: worker.gpustack.ai/v1
kind: InstanceSSHPublicKey
metadata: {name: e2e-alice, namespace: default}
spec: {data: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice"}
---
apiVersion: worker.gpustack.ai/v1
kind: InstanceImagePullSecret
metadata: {name: e2e-registry, namespace: default}
spec: {registry: registry.example.com, username: alice, password: ` + password + `}
`)
	var want []string
	for _, name := range []string{"member-a", "member-b"} {
		out := members[name].Kubectl("get", "instancepersistentvolumetypes", "-o", "jsonpath={.items[*].metadata.name}")
		for _, t := range strings.Fields(out) {
			want = append(want, "clusterinstancepersistentvolumetype.gateway.gpustack.ai/"+name+"."+t)
		}
	}
	Expect(want).NotTo(BeEmpty(), "the members project their StorageClasses")
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		types, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstancepersistentvolumetypes", "-o", "name")
		keys, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstancesshpublickeys", "-A", "-o", "name")
		secrets, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstanceimagepullsecrets", "-n", "default", "-o", "name")
		// The chart's member role lets the gateway read every kind: no member's entry names one it could not.
		messages, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clustermembers", "-o", "jsonpath={.items[*].status.message}")
		ok := slices.Equal(strings.Fields(types), want) &&
			strings.TrimSpace(keys) == "clusterinstancesshpublickey.gateway.gpustack.ai/member-a.e2e-alice" &&
			strings.TrimSpace(secrets) == "clusterinstanceimagepullsecret.gateway.gpustack.ai/member-a.e2e-registry" && strings.TrimSpace(messages) == ""
		return ok, fmt.Sprintf("volume types:\n%s(want %v)\nSSH keys:\n%s\npull secrets:\n%s\nmembers' messages: %s", types, want, keys, secrets, messages)
	})
	for _, resource := range []string{"clusterinstancesshpublickeys", "clusterinstanceimagepullsecrets"} {
		out, err := testenv.Kubectl(manager.Kubeconfig, "get", resource, "-A", "-o", "json")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).NotTo(Or(ContainSubstring("AAAAC3NzaC1lZDI1NTE5"), ContainSubstring(password)), resource)
	}
})

// A watch from a list's resourceVersion replays what changed since, on whichever of the gateway's two replicas
// kube-apiserver sends it to: member-a's T4 type is labelled after the list, and each of several watches from
// the list's resourceVersion (kubectl get --raw, ended by timeoutSeconds) sends it MODIFIED with the label,
// none refuses the resourceVersion.
var _ = It("replays to a watch from a list's resourceVersion on either replica", func() {
	const path = "/apis/gateway.gpustack.ai/v1/clusterinstancetypes"
	// A replica refuses (410) a watch from the other's resourceVersion older than its own start and a margin
	// (internal/gateway's history): wait for both to be older than that, whatever a spec before restarted.
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "-n", localcluster.ChartNamespace, "get", "pods", "-l", "app.kubernetes.io/component=worker-gateway",
			"-o", `jsonpath={range .items[*]}{.status.containerStatuses[0].state.running.startedAt}{"\n"}{end}`)
		old := 0
		for _, f := range strings.Fields(out) {
			if started, err := time.Parse(time.RFC3339, f); err == nil && time.Since(started) > 45*time.Second {
				old++
			}
		}
		return old == 2, "the gateway's replicas started at:\n" + out
	})
	out, err := testenv.Kubectl(manager.Kubeconfig, "get", "--raw", path)
	Expect(err).NotTo(HaveOccurred(), out)
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	Expect(json.Unmarshal([]byte(out), &list)).To(Succeed())
	Expect(list.Metadata.ResourceVersion).NotTo(BeEmpty())

	a := members["member-a"]
	a.Kubectl("label", "instancetype", t4Type, "e2e-replayed=yes")
	DeferCleanup(func() { _, _ = testenv.Kubectl(a.Cluster.Kubeconfig, "label", "instancetype", t4Type, "e2e-replayed-") })
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		got, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clusterinstancetypes", "member-a."+t4Type, "-o", "jsonpath={.metadata.labels.e2e-replayed}")
		return strings.TrimSpace(got) == "yes", "the manager's member-a." + t4Type + " is not labelled yet: " + got
	})
	for i := range 4 {
		watch := path + "?watch=true&timeoutSeconds=6&resourceVersion=" + list.Metadata.ResourceVersion
		out, err := testenv.Kubectl(manager.Kubeconfig, "get", "--raw", watch)
		Expect(err).NotTo(HaveOccurred(), "watch %d: %s", i, out)
		Expect(out).NotTo(ContainSubstring(`"type":"ERROR"`), "watch %d", i)
		replayed := false
		dec := json.NewDecoder(strings.NewReader(out))
		for dec.More() {
			var ev struct {
				Type   string `json:"type"`
				Object struct {
					Metadata struct {
						Name   string            `json:"name"`
						Labels map[string]string `json:"labels"`
					} `json:"metadata"`
				} `json:"object"`
			}
			Expect(dec.Decode(&ev)).To(Succeed(), "watch %d: %s", i, out)
			replayed = replayed || (ev.Type == "MODIFIED" && ev.Object.Metadata.Name == "member-a."+t4Type && ev.Object.Metadata.Labels["e2e-replayed"] == "yes")
		}
		Expect(replayed).To(BeTrue(), "watch %d from %s: %s", i, list.Metadata.ResourceVersion, out)
	}
})
