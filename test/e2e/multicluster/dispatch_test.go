package multicluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// The CPU type both members have: member-a's nodes hold 72 cores (48 on its largest), member-b's 144 (112 free
// on one node).
const cpuType = "gpustack--generic-linux-amd64"

// instanceState is the manager's Instance's phase, member cluster and message, as jsonpath prints them.
func instanceState(name string) string {
	out, _ := testenv.Kubectl(manager.Kubeconfig, "-n", "default", "get", "instance", name, "-o",
		"jsonpath={.status.phase}/{.status.cluster}/{.status.phaseMessage}")
	return out
}

// An Instance created on the manager is dispatched by the manager's Kueue (MultiKueue, kept in step by the
// gateway) to the members that offer its type; the member whose queue and per-node fit can hold it runs it,
// and its Pod's status comes back to the manager's Instance. One no member can hold waits, saying so.
var _ = It("runs an Instance created on the manager on the member that can fit it, and says why one waits", func() {
	waitAggregated(bothAnswer)
	ctx, k := context.Background(), managerClient
	By("the manager mirroring the members' type (Active), its queue with the members' quotas summed and an active MultiKueue check")
	// MultiKueue connects to a member again with its own backoff (up to 5m20s) after the member stopped
	// answering, as the spec that stops member-b makes it.
	e2esuite.WaitFor(6*time.Minute, func() (bool, string) {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "get", "multikueueclusters", "-o",
			"jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=='Active')].status} {end}")
		return out == "member-a=True member-b=True ", "the manager's MultiKueueClusters (Active): " + out
	})
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clusterqueue", cpuType, "-o",
			"jsonpath={.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota} {.status.conditions[?(@.type=='Active')].status}")
		typ, _ := testenv.Kubectl(manager.Kubeconfig, "get", "instancetype", cpuType, "-o", "jsonpath={.status.phase} {.status.cpu.capacity}")
		if out == "216 True" && typ == string(workerv1.InstanceTypeActive)+" 216" {
			return true, ""
		}
		why, _ := testenv.Kubectl(manager.Kubeconfig, "get", "clusterqueues,admissionchecks,multikueueclusters",
			"-o", "jsonpath={range .items[*]}{.kind}/{.metadata.name}: {.status.conditions[?(@.type=='Active')].message}{\"\\n\"}{end}")
		return false, "the manager's InstanceType " + cpuType + " (phase, CPU capacity): " + typ + "; its ClusterQueue (quota, Active): " + out + "\n" + why
	})

	By("100 cores: more than member-a's queue holds, within member-b's; its SSH port exposed")
	fits := builders.MakeInstance("default", "dispatched-cpu", cpuType).CPU("100").Obj()
	fits.Spec.Ports = []workerv1.InstancePort{{Name: "ssh", Port: 22}}
	// The manager's webhook reads the type from its cache, a moment behind the API server.
	Eventually(func() error { return k.Create(ctx, fits) }, 30*time.Second, time.Second).Should(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), fits) })
	e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
		s := instanceState(fits.Name)
		return strings.HasPrefix(s, "Ready/member-b/"), "the manager's Instance (phase/cluster/message): " + s
	})
	Expect(members["member-b"].Kubectl("-n", "default", "get", "pod", fits.Name, "-o", "jsonpath={.status.phase}")).To(Equal("Running"))
	// MultiKueue copies only the Pod: member-b's worker made the host-keys Secret its SSH sidecar mounts.
	Expect(members["member-b"].Kubectl("-n", "default", "get", "secret", fits.Name+"-ssh-host-keys", "-o",
		"jsonpath={.metadata.ownerReferences[0].kind}")).To(Equal("Pod"))
	_, err := testenv.Kubectl(members["member-a"].Cluster.Kubeconfig, "-n", "default", "get", "pod", fits.Name)
	Expect(err).To(MatchError(ContainSubstring("NotFound")), "member-a runs no copy")

	By("reaching it at the address and node port the manager's Instance shows: member-b's, not the manager's")
	var address string
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		address, _ = testenv.Kubectl(manager.Kubeconfig, "-n", "default", "get", "instance", fits.Name, "-o",
			"jsonpath={.status.accessAddresses[0]}:{.status.ports[0].nodePort}")
		if !strings.HasPrefix(address, ":") && !strings.HasSuffix(address, ":") {
			return true, ""
		}
		// Where the note stopped: member-b's worker makes it on the Service, the gateway copies it to the Pod.
		noted, _ := testenv.Kubectl(members["member-b"].Cluster.Kubeconfig, "-n", "default", "get", "service", fits.Name, "-o",
			`jsonpath={.metadata.annotations.instance\.gpustack\.ai/access}`)
		copied, _ := testenv.Kubectl(manager.Kubeconfig, "-n", "default", "get", "pod", fits.Name, "-o",
			`jsonpath={.metadata.annotations.gateway\.gpustack\.ai/member-access}`)
		return false, fmt.Sprintf("the manager's Instance's address:nodePort: %s; member-b's Service notes %q; the manager's Pod %q",
			address, noted, copied)
	})
	GinkgoWriter.Println("the manager's Instance is reached at", address)
	hostIP := members["member-b"].Kubectl("-n", "default", "get", "pod", fits.Name, "-o", "jsonpath={.status.hostIP}")
	nodePort := members["member-b"].Kubectl("-n", "default", "get", "service", fits.Name, "-o", "jsonpath={.spec.ports[0].nodePort}")
	Expect(address).To(Equal(hostIP+":"+nodePort), "member-b's node and its Service's node port")
	_, err = testenv.Kubectl(manager.Kubeconfig, "-n", "default", "get", "service", fits.Name)
	Expect(err).To(MatchError(ContainSubstring("NotFound")), "the manager makes no Service of its own for it")
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		banner, err := sshBanner(address)
		return strings.HasPrefix(banner, "SSH-2.0-"), fmt.Sprintf("the SSH sidecar's banner at %s: %q %v", address, banner, err)
	})

	By("deleting it: the member's Pod goes too")
	Expect(k.Delete(ctx, fits)).To(Succeed())
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		_, err := testenv.Kubectl(members["member-b"].Cluster.Kubeconfig, "-n", "default", "get", "pod", fits.Name)
		return err != nil && strings.Contains(err.Error(), "NotFound"), fmt.Sprintf("member-b's Pod: %v", err)
	})

	By("200 cores: within the manager's summed quota, more than either member holds")
	waits := builders.MakeInstance("default", "dispatched-too-big", cpuType).CPU("200").Obj()
	Eventually(func() error { return k.Create(ctx, waits) }, 30*time.Second, time.Second).Should(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), waits) })
	e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
		s := instanceState(waits.Name)
		return strings.HasPrefix(s, string(workerv1.InstanceStarting)+"//waiting for a member cluster to admit it: member-a: waiting for quota: ") &&
			strings.Contains(s, "; member-b: waiting for quota: "), "the manager's Instance (phase/cluster/message): " + s
	})
	GinkgoWriter.Println("the manager's Instance that no member can hold:", instanceState(waits.Name))
	Consistently(func() string { return instanceState(waits.Name) }, 10*time.Second, time.Second).
		Should(HavePrefix(string(workerv1.InstanceStarting) + "//"))
})

// t4Type is member-a's alone: five cards.
const t4Type = "gpustack--nvidia-tesla-t4-linux-amd64"

// waitT4Dispatchable waits until the manager can dispatch t4Type: member-a's controllers are Ready (after an
// outage of its API server, Kueue's restarts a few times), both members answer, member-a's MultiKueueCluster is
// Active (MultiKueue connects again with its own backoff after an outage) and the manager's mirror of the type
// is Active.
func waitT4Dispatchable() {
	GinkgoHelper()
	waitControllersReady(members["member-a"].Cluster.Kubeconfig)
	waitAggregated(bothAnswer)
	e2esuite.WaitFor(6*time.Minute, func() (bool, string) {
		out, _ := testenv.Kubectl(manager.Kubeconfig, "get", "multikueueclusters", "member-a", "-o", "jsonpath={.status.conditions[?(@.type=='Active')].status}")
		typ, _ := testenv.Kubectl(manager.Kubeconfig, "get", "instancetype", t4Type, "-o", "jsonpath={.status.phase}")
		return out == "True" && typ == string(workerv1.InstanceTypeActive), "member-a Active: " + out + "; the manager's " + t4Type + ": " + typ
	})
}

// The T4 type is member-a's alone: five cards. Six 60 % slices fit its queue's quota (360 of 500), but only one
// per card: member-a's per-card check admits five, each Ready on the manager, and holds the sixth, whose
// Instance on the manager tells the check's reason from member-a.
var _ = It("lets the member's per-card check judge what the manager dispatches", func() {
	waitT4Dispatchable()
	ctx, k := context.Background(), managerClient
	var names []string
	for i := range 6 {
		inst := builders.MakeInstance("default", fmt.Sprintf("dispatched-slice-%d", i), t4Type).Slice(60, 100).Obj()
		Eventually(func() error { return k.Create(ctx, inst) }, 30*time.Second, time.Second).Should(Succeed())
		DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
		names = append(names, inst.Name)
	}
	e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
		ready, waiting, states := 0, 0, ""
		for _, n := range names {
			s := instanceState(n)
			states += "\n" + n + ": " + s
			switch {
			case strings.HasPrefix(s, "Ready/member-a/"):
				ready++
			case strings.HasPrefix(s, string(workerv1.InstanceStarting)+"//waiting for a member cluster to admit it: member-a: waiting for a card with room: "):
				waiting++
			}
		}
		return ready == 5 && waiting == 1, "five Ready on member-a, one waiting for a card there:" + states
	})
})

// The manager allows privileged Instances; member-a, the T4 type's one member, keeps its default, which does
// not. The manager's gates pass the Instance and MultiKueue copies it to member-a, whose per-card check holds
// member-a's gates over the copy: it is refused there, no Pod of it runs there, and the manager's Instance
// tells member-a's reason.
var _ = It("lets a member refuse a privileged Instance its settings forbid, though the manager's allow it", func() {
	waitT4Dispatchable()
	ctx, k := context.Background(), managerClient
	allow := func(value string) error {
		_, err := testenv.Kubectl(manager.Kubeconfig, "-n", workerv1.SystemNamespace, "patch", "setting",
			workerv1.SettingInstancePrivilegedAllowed, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"value":%q}}`, value))
		return err
	}
	Expect(allow("true")).To(Succeed())
	DeferCleanup(func() { _ = allow("false") })
	inst := builders.MakeInstance("default", "dispatched-privileged", t4Type).Accelerators(1).Privileged().Obj()
	// The manager's webhook reads the setting from its cache, a moment behind the API server.
	Eventually(func() error { return k.Create(ctx, inst) }, 30*time.Second, time.Second).Should(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
		s := instanceState(inst.Name)
		return strings.HasPrefix(s, string(workerv1.InstanceStarting)+"//waiting for a member cluster to admit it: member-a: refused by this cluster's settings: ") &&
			strings.Contains(s, `enable the "instance-privileged-allowed" setting`), "the manager's Instance (phase/cluster/message): " + s
	})
	GinkgoWriter.Println("the manager's Instance member-a refuses:", instanceState(inst.Name))
	Consistently(func() string {
		phase, _ := testenv.Kubectl(members["member-a"].Cluster.Kubeconfig, "-n", "default", "get", "pod", inst.Name, "-o", "jsonpath={.status.phase}")
		return phase
	}, 10*time.Second, time.Second).ShouldNot(Equal("Running"), "member-a runs no Pod of the refused Instance")
})

// sshBanner is the first line an SSH server at address sends.
func sshBanner(address string) (string, error) {
	conn, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close() }()
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	return bufio.NewReader(conn).ReadString('\n')
}
