package rbac_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// The Settings are a fixed set, as the reference serves them: the chart's policy refuses an administrator's
// create and delete with the way to do it instead (patch the value), while the worker creates the ones it
// keeps. Every write but the fixture's is a dry run.
var _ = It("refuses to create or delete a Setting but to the worker", func(ctx context.Context) {
	createRoles(ctx, "worker")
	setting := func(name string) *workerv1.Setting {
		return &workerv1.Setting{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: name}}
	}
	worker := asComponent("worker")
	existing := setting(workerv1.SettingWorkloadFitAffinity)
	Expect(suite.Client.Create(ctx, existing)).To(Succeed())
	// Cleanups run last first: this one after the policy's objects are gone, once the API server lets go of it.
	DeferCleanup(func(ctx context.Context) {
		Eventually(func() error {
			return client.IgnoreNotFound(suite.Client.Delete(ctx, setting(workerv1.SettingWorkloadFitAffinity)))
		}).WithTimeout(time.Minute).Should(Succeed())
	})
	for _, o := range chartTemplate("templates/settings.yaml") {
		Expect(suite.Client.Create(ctx, o)).To(Succeed(), "cannot create %s %s", o.GetKind(), o.GetName())
		DeferCleanup(func(ctx context.Context) { _ = suite.Client.Delete(ctx, o) })
	}

	// The API server enforces a new policy once its informers hold it and its binding.
	Eventually(func() error {
		return suite.Client.Delete(ctx, setting(workerv1.SettingWorkloadFitAffinity), client.DryRunAll)
	}).
		WithTimeout(time.Minute).Should(MatchError(ContainSubstring(`settings.worker.gpustack.ai "workload-fit-affinity" is forbidden: ` +
		`Settings cannot be deleted: the worker keeps one of each; patch spec.value instead ("" returns it to its default)`)))
	Expect(suite.Client.Create(ctx, setting(workerv1.SettingInstancePrivilegedAllowed), client.DryRunAll)).To(MatchError(ContainSubstring(
		`settings.worker.gpustack.ai "instance-privileged-allowed" is forbidden: Settings cannot be created`)))
	patched := existing.DeepCopy()
	patched.Spec.Value = "false"
	Expect(suite.Client.Patch(ctx, patched, client.MergeFrom(existing), client.DryRunAll)).To(Succeed(), "an administrator patches a Setting")

	Expect(worker.Create(ctx, setting(workerv1.SettingInstancePrivilegedAllowed), client.DryRunAll)).To(Succeed(), "the worker creates the Settings it keeps")
})
