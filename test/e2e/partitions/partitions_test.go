package partitions

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gpustack/gpustack-operator/instancepod"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
)

const (
	h100 = "gpustack--nvidia-h100-80gb-hbm3-linux-amd64"
	a100 = "gpustack--nvidia-a100-sxm4-80gb-linux-amd64"
)

// Every spec starts from the pools as composed, with every placement free.
var _ = BeforeEach(func() {
	waitViews(h100, "0/0 0/0 0/0 1/56")
	waitViews(a100, "0/0 0/0 0/0 1/7")
})

// create makes an Instance of one partition of the profile and deletes it when the spec ends.
func create(name, instanceType, profile string) {
	GinkgoHelper()
	inst := builders.MakeInstance("default", name, instanceType).Partition(profile).Obj()
	Expect(suite.Client.Create(context.Background(), inst)).To(Succeed())
	DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), inst) })
}

// Reference-behaviour section 12's example: eight H100s in MIG mode, one 3g.40gb in use. The pool's PT view
// reads 1/52 (one 3g.40gb takes half a card: seven cards give 7 each, the eighth 3 more 1g.10gb), the node's
// per-profile keys are held + possible (1g.10gb 52, 3g.40gb 16), and all returns when the Instance goes.
var _ = It("runs a 3g.40gb Instance on an H100 and moves the PT view", func() {
	create("mig-demo", h100, "3g.40gb")
	waitPhase("mig-demo", "Ready")
	waitViews(h100, "0/0 0/0 0/0 1/52")
	Expect(suite.Kubectl("get", "instancetype", h100, "-o",
		`jsonpath={range .status.acceleratorPartitioned.remainingProfiles[*]}{.name}={.count} {end}`)).To(Equal(
		"1g.10gb=52 1g.20gb=30 2g.20gb=22 3g.40gb=15 4g.40gb=7 7g.80gb=7 "))
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		got := suite.Kubectl("get", "node", "node-h100", "-o",
			`jsonpath={.status.capacity.nvidia\.com/gpu\.partitioned\.mig-1g\.10gb} {.status.capacity.nvidia\.com/gpu\.partitioned\.mig-3g\.40gb}`)
		return got == "52 16", "node-h100's 1g.10gb and 3g.40gb keys: " + got
	})
	// The per-card check pinned the Pod to the node it counted it on; Kueue put the pin in its nodeSelector.
	Expect(suite.Kubectl("get", "pod", "mig-demo", "-n", "default", "-o",
		`jsonpath={.spec.nodeName} {.spec.nodeSelector.kubernetes\.io/hostname}`)).To(Equal("node-h100 node-h100"))
	// The container sees the MIG device the agent made for it through the node's driver, by NVML's name for it.
	env := suite.Kubectl("exec", "mig-demo", "-n", "default", "-c", instancepod.MainContainer, "--", "env")
	Expect(env).To(MatchRegexp(`(?m)^NVIDIA_VISIBLE_DEVICES=MIG-GPU-[0-9a-f-]+/\d+/0$`), "mig-demo's environment")

	suite.Kubectl("delete", "instance", "mig-demo", "-n", "default")
	waitViews(h100, "0/0 0/0 0/0 1/56")
})

// The A100 holds seven 1g.10gb, each an eighth of its credits. With six held, two Instances race for the
// seventh placement: quota has room for both (an eighth is left after the seventh), so the per-card check
// decides: one runs, the other waits with the check's reason, and runs once the first goes.
var _ = It("gives the last placement to one of two racing Instances", func() {
	for _, name := range []string{"hold-0", "hold-1", "hold-2", "hold-3", "hold-4", "hold-5"} {
		create(name, a100, "1g.10gb")
	}
	for _, name := range []string{"hold-0", "hold-1", "hold-2", "hold-3", "hold-4", "hold-5"} {
		waitPhase(name, "Ready")
	}
	waitViews(a100, "0/0 0/0 0/0 1/1")
	create("race-a", a100, "1g.10gb")
	create("race-b", a100, "1g.10gb")
	var winner, loser string
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		a, b := phase("race-a"), phase("race-b")
		switch {
		case strings.HasPrefix(a, "Ready"):
			winner, loser = "race-a", "race-b"
		case strings.HasPrefix(b, "Ready"):
			winner, loser = "race-b", "race-a"
		default:
			return false, "neither runs: race-a " + a + "; race-b " + b
		}
		return true, ""
	})
	waitPhase(loser, "Starting: waiting for a card with room: ")
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		got := suite.Kubectl("get", "instance", loser, "-n", "default", "-o", "jsonpath={.status.phaseMessage}")
		return strings.Contains(got, "no card has a free placement for 1 1g.10gb partition(s)"), loser + " names the profile: " + got
	})
	waitViews(a100, "0/0 0/0 0/0 0/0")

	suite.Kubectl("delete", "instance", winner, "-n", "default")
	waitPhase(loser, "Ready")
})
