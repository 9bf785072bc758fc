package composer_test

import (
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/record"

	"github.com/gpustack/gpustack-operator/internal/controller/composer"
	"github.com/gpustack/gpustack-operator/pools"
	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/test/framework/walkthrough"
)

// With GPUSTACK_DEVICES_GROUP_ID_WITH_MEMORY=true the device managers key each group by product and memory; the
// chain then names flavors and pools by those keys, and the pools count the same cards as in Step 1.
var _ = It("names flavors and pools by product and memory when the device managers group by memory", func() {
	withMemory := func(k string) string {
		if k == providers.EnvGroupIDWithMemory {
			return "true"
		}
		return ""
	}
	Expect(providers.Configure(withMemory)).To(Succeed())
	DeferCleanup(func() { Expect(providers.Configure(func(string) string { return "" })).To(Succeed()) })
	suite.Create(profiledNodes("walkthrough.yaml")...)
	r := &composer.Reconciler{Client: suite.Client, Recorder: record.NewFakeRecorder(100)}
	// The first recompute creates the derived types; the next gives them their pools and status.
	recomputeWith(r)
	recomputeWith(r)

	rename := strings.NewReplacer("nvidia-a10g", "nvidia-a10g-24g", "nvidia-tesla-t4", "nvidia-tesla-t4-16g")
	want := chain{Types: [][]string{walkthrough.Step1Types[0]}}
	for _, f := range walkthrough.Step1Flavors {
		want.ResourceFlavors = append(want.ResourceFlavors, rename.Replace(f))
	}
	for _, row := range walkthrough.Step1Types[1:] {
		name := rename.Replace(row[0])
		want.ClusterQueues = append(want.ClusterQueues, name)
		want.LocalQueues = append(want.LocalQueues, "default/"+pools.EntranceName(name))
		want.Types = append(want.Types, append([]string{name, pools.EntranceName(name)}, row[2:]...))
	}
	got := observe()
	for _, s := range [][]string{want.ResourceFlavors, want.ClusterQueues, want.LocalQueues} {
		sort.Strings(s)
	}
	Expect(cmp.Diff(want, got)).To(BeEmpty(), "Reconcile(...) grouped by memory: -want, +got")
})
