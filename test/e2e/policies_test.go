package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/test/framework/policycases"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// notInAPIServer are cases the API server answers before the policies: core validation refuses a fractional
// extended resource, and impersonating the operator's service account needs RBAC the test cluster lacks.
var notInAPIServer = map[string]string{
	"milli-quantity-slice": "core validation refuses fractional extended resources",
	"operator-account":     "impersonating the operator's service account",
}

// Finds the CEL policies installed in the cluster's kube-apiserver, checks that they
// type check cleanly, and runs the shared case table's creations through it (server-side dry run, so nothing is
// queued): denied requests fail with the table's messages, allowed ones pass.
var _ = It("finds the CEL policies installed in the cluster's kube-apiserver, checks that they type check cleanly, and runs the shared case table's creations through it (server-side dry run, so nothing is queued)", func() {
	ctx := context.Background()
	// The chart installs policies/cel (its files/policies, kept equal by make generate).
	// The type checker of kube-controller-manager reports on every policy.
	files, _ := filepath.Glob(testenv.Path("policies", "cel", "*.yaml"))
	var names []string
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, m := range regexp.MustCompile(`(?m)^kind: ValidatingAdmissionPolicy\nmetadata:\n  name: (\S+)`).FindAllStringSubmatch(string(data), -1) {
			names = append(names, m[1])
		}
	}
	if len(names) != 9 {
		Fail(fmt.Sprintf("found %d policies in policies/cel, want 9", len(names)))
	}
	for _, name := range names {
		eventually(time.Minute, func() (bool, string) {
			p := &admissionv1.ValidatingAdmissionPolicy{}
			if err := k.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
				return false, err.Error()
			}
			if p.Status.TypeChecking == nil || p.Status.ObservedGeneration != p.Generation {
				return false, name + " is not type checked yet"
			}
			if w := p.Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
				Fail(fmt.Sprintf("policy %s has type-checking warnings: %+v", name, w))
			}
			return true, ""
		})
	}

	cases, err := policycases.Load(testenv.Path("policies", "testdata", "cases.yaml"))
	Expect(err).NotTo(HaveOccurred())
	// Bindings take a moment to reach the admission plugin: wait until a denied Pod is denied.
	eventually(time.Minute, func() (bool, string) {
		warmup := policycases.Case{Name: "policies-warmup", Kind: "Pod", Spec: map[string]any{"containers": []any{map[string]any{
			"name": "main", "image": "busybox", "resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu.sliced": "2",
				"nvidia.com/gpu.sliced.memory-percentage": "20"}}}}}}
		err := dryRun(ctx, warmup)
		return err != nil && strings.Contains(err.Error(), "a logical slice request is always a single accelerator"), fmt.Sprint(err)
	})
	ran := 0
	var failures []string
	for _, c := range cases {
		if c.Kind == "Instance" || c.OldSpec != nil || notInAPIServer[strings.SplitN(c.Name, "/", 2)[0]] != "" {
			continue
		}
		if msg := checkDenial(c.Want, dryRun(ctx, c)); msg != "" {
			failures = append(failures, c.Name+": "+msg)
		}
		ran++
	}
	Expect(failures).To(BeEmpty(), "cases the API server answers against the shared table")
	if ran < 100 {
		Fail(fmt.Sprintf("only %d cases ran through the API server", ran))
	}
})

// Runs the Instance gates through the API server with the cluster's real Settings: a
// privileged Instance is refused with the seed's message while the setting is off and accepted once it is on,
// and turning it off again keeps an Instance that already holds the grant editable.
var _ = It("runs the Instance gates through the API server with the cluster's real Settings", func() {
	DeferCleanup(func() {
		kubectl("delete", "instance", "gate-holder", "--ignore-not-found", "--wait=false")
		kubectl("-n", "gpustack-system", "patch", "setting", "instance-privileged-allowed", "--type=merge", "-p", `{"spec":{"value":"false"}}`)
	})
	instance := func(name string, privileged bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"type": "gpustack--nvidia-a10g-linux-amd64", "image": "ubuntu:24.04", "privileged": privileged,
			"volume": map[string]any{"ephemeral": map[string]any{"capacity": "1Gi"}}}}}
		u.SetAPIVersion("worker.gpustack.ai/v1")
		u.SetKind("Instance")
		u.SetNamespace("default")
		u.SetName(name)
		return u
	}
	ctx := context.Background()
	const seed = `privileged mode is not allowed: enable the "instance-privileged-allowed" setting to allow it`
	eventually(time.Minute, func() (bool, string) {
		err := k.Create(ctx, instance("gate-probe", true), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), seed), fmt.Sprint(err)
	})
	kubectl("-n", "gpustack-system", "patch", "setting", "instance-privileged-allowed", "--type=merge", "-p", `{"spec":{"value":"true"}}`)
	holder := instance("gate-holder", true)
	eventually(time.Minute, func() (bool, string) {
		err := k.Create(ctx, holder)
		return err == nil, fmt.Sprint(err)
	})
	kubectl("-n", "gpustack-system", "patch", "setting", "instance-privileged-allowed", "--type=merge", "-p", `{"spec":{"value":"false"}}`)
	eventually(time.Minute, func() (bool, string) {
		err := k.Create(ctx, instance("gate-probe", true), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), seed), fmt.Sprint(err)
	})
	// The holder keeps its grant: stopping it is an update that does not take privileged mode anew.
	kubectl("patch", "instance", "gate-holder", "--type=merge", "-p", `{"spec":{"stop":true}}`)
})

// dryRun creates a case's Pod with a server-side dry run and returns the API server's answer.
func dryRun(ctx context.Context, c policycases.Case) error {
	pod, _ := c.Objects()
	return k.Create(ctx, pod, client.DryRunAll)
}

// checkDenial compares the API server's answer with the table: no messages means accepted; otherwise the
// request must be refused, and the refusal must carry one of the table's messages (the API server stops at
// the first policy that denies).
func checkDenial(want []string, err error) string {
	if len(want) == 0 {
		if err != nil {
			return fmt.Sprintf("want accepted, got: %v", err)
		}
		return ""
	}
	if err == nil {
		return fmt.Sprintf("want refused with %q, it was accepted", want)
	}
	for _, w := range want {
		if strings.Contains(err.Error(), w) {
			return ""
		}
	}
	return fmt.Sprintf("want a refusal carrying one of %q, got: %v", want, err)
}
