package e2e

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// sshImageFromEnv is the value the suite's worker.extraEnv seeds instance-ssh-server-image with: the default
// image, fully named, so the Instances' sidecars run as in every other spec.
const sshImageFromEnv = "docker.io/gpustack/ssh-server:v1.3.0"

// The reference's commands for the Settings, each with the reference's shape: they are listed with their value
// and default, patched, never created or deleted, and seeded from the worker's GPUSTACK_<SETTING> variables.
var _ = It("serves the Settings as the reference's commands use them", func() {
	rows := kubectlTable("-n", "gpustack-system", "get", "settings")
	Expect(rows[0]).To(Equal([]string{"NAME", "VALUE", "DEFAULT"}), "kubectl get settings' columns")
	Expect(rows[1:]).To(HaveLen(len(workerv1.SettingDefinitions)), "one Setting of each")

	Expect(kubectl("-n", "gpustack-system", "get", "setting", workerv1.SettingInstanceSSHServerImage, "-o", "jsonpath={.status.value}")).
		To(Equal(sshImageFromEnv), "seeded from the worker's GPUSTACK_INSTANCE_SSH_SERVER_IMAGE")

	const name = workerv1.SettingInstanceAccessWildcardDNS
	kubectl("-n", "gpustack-system", "patch", "setting", name, "--type=merge", "-p", `{"spec":{"value":"nip.io"}}`)
	DeferCleanup(func() {
		kubectl("-n", "gpustack-system", "patch", "setting", name, "--type=merge", "-p", `{"spec":{"value":""}}`)
	})
	eventually(30*time.Second, func() (bool, string) {
		v := kubectl("-n", "gpustack-system", "get", "setting", name, "-o", "jsonpath={.status.value}")
		return v == "nip.io", "the patched value in status: " + v
	})

	_, err := testenv.Kubectl(cluster.Kubeconfig, "-n", "gpustack-system", "delete", "setting", name)
	Expect(err).To(MatchError(ContainSubstring(`settings.worker.gpustack.ai "` + name + `" is forbidden: Settings cannot be deleted`)))
	manifest := filepath.Join(GinkgoT().TempDir(), "setting.yaml")
	Expect(os.WriteFile(manifest, []byte("apiVersion: worker.gpustack.ai/v1\nkind: Setting\nmetadata:\n  name: "+name+
		"\n  namespace: gpustack-system\nspec:\n  value: example.com\n"), 0o600)).To(Succeed())
	_, err = testenv.Kubectl(cluster.Kubeconfig, "create", "-f", manifest)
	Expect(err).To(MatchError(ContainSubstring(`settings.worker.gpustack.ai "` + name + `" is forbidden: Settings cannot be created`)))
})
