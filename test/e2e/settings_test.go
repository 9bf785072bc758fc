package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// sshImageFromEnv is the value the suite's worker.extraEnv seeds instance-ssh-server-image with: the default
// image, fully named, so the Instances' sidecars run as in every other spec.
const sshImageFromEnv = "docker.io/gpustack/ssh-server:v1.3.0"

// settingManifest writes a Setting of apiVersion for kubectl create -f.
func settingManifest(apiVersion, name string) string {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "setting.yaml")
	Expect(os.WriteFile(path, []byte("apiVersion: "+apiVersion+"\nkind: Setting\nmetadata:\n  name: "+name+
		"\n  namespace: gpustack-system\nspec:\n  value: example.com\n"), 0o600)).To(Succeed())
	return path
}

// The reference's commands for the Settings, each with the reference's shape: settings.gpustack.ai/v1, served
// by the worker through kube-apiserver's aggregation layer, lists one Setting of each with its value and
// default, reads back no spec, is patched but never created or deleted, and is seeded from the worker's
// GPUSTACK_<SETTING> variables.
var _ = Describe("the Settings, as the reference's commands use them", func() {
	const name = workerv1.SettingInstanceAccessWildcardDNS

	It("lists one Setting of each, with its value and its default", func() {
		rows := kubectlTable("-n", "gpustack-system", "get", "settings")
		Expect(rows[0]).To(Equal([]string{"NAME", "VALUE", "DEFAULT"}), "kubectl get settings' columns")
		Expect(rows[1:]).To(HaveLen(len(workerv1.SettingDefinitions)), "one Setting of each")
	})

	DescribeTable("answer each command as the reference does",
		func(args func() []string, want types.GomegaMatcher) {
			out, err := testenv.Kubectl(cluster.Kubeconfig, args()...)
			if err != nil {
				out = err.Error()
			}
			Expect(out).To(want)
		},
		Entry("get: a value seeded from the worker's GPUSTACK_INSTANCE_SSH_SERVER_IMAGE",
			func() []string {
				return []string{"-n", "gpustack-system", "get", "set", workerv1.SettingInstanceSSHServerImage, "-o", "jsonpath={.status.value}"}
			},
			Equal(sshImageFromEnv)),
		Entry("get -o yaml: the status of the reference, and no spec",
			func() []string { return []string{"-n", "gpustack-system", "get", "setting", name, "-o", "yaml"} },
			SatisfyAll(ContainSubstring("apiVersion: settings.gpustack.ai/v1"), ContainSubstring("editable: true"),
				ContainSubstring("sensitive: false"), Not(ContainSubstring("spec:")))),
		Entry("api-resources: namespaced, short name set, and no create or delete",
			func() []string { return []string{"api-resources", "--api-group=settings.gpustack.ai", "-o", "wide"} },
			MatchRegexp(`settings\s+set\s+settings.gpustack.ai/v1\s+true\s+Setting\s+\[?get[ ,]list[ ,]patch[ ,]update[ ,]watch\]?\s+gpustack`)),
		Entry("explain: the served schema",
			func() []string { return []string{"explain", "settings.status.sensitive"} },
			MatchRegexp(`GROUP:\s+settings.gpustack.ai[\s\S]*FIELD: sensitive <boolean>`)),
		Entry("delete: refused",
			func() []string { return []string{"-n", "gpustack-system", "delete", "setting", name} },
			ContainSubstring("(MethodNotAllowed): the server does not allow this method on the requested resource")),
		Entry("create: refused",
			func() []string { return []string{"create", "-f", settingManifest("settings.gpustack.ai/v1", name)} },
			ContainSubstring("(MethodNotAllowed)")),
		Entry("create of the stored kind: refused too",
			func() []string { return []string{"create", "-f", settingManifest("worker.gpustack.ai/v1", name)} },
			ContainSubstring(`settings.worker.gpustack.ai "`+name+`" is forbidden: Settings cannot be created`)),
	)

	It("patches a value, which is in effect and never read back", func() {
		kubectl("-n", "gpustack-system", "patch", "setting", name, "--type=merge", "-p", `{"spec":{"value":"nip.io"}}`)
		DeferCleanup(func() {
			kubectl("-n", "gpustack-system", "patch", "setting", name, "--type=merge", "-p", `{"spec":{"value":""}}`)
		})
		eventually(30*time.Second, func() (bool, string) {
			v := kubectl("-n", "gpustack-system", "get", "setting", name, "-o", "jsonpath={.status.value}/{.spec}")
			return v == "nip.io/", "the patched value in status, and no spec: " + v
		})
		Expect(kubectl("-n", "gpustack-system", "get", "settings.worker.gpustack.ai", name, "-o", "jsonpath={.status.value}")).
			To(Equal("nip.io"), "the worker's stored Setting takes the value, and its status says so")
	})

	It("patches a sensitive value, which is in effect and read back only as (sensitive)", func() {
		const auth = workerv1.SettingContainerRegistryAuth
		kubectl("-n", "gpustack-system", "patch", "set", auth, "--type=merge", "-p", `{"spec":{"value":"robot:e2e-token"}}`)
		DeferCleanup(func() {
			kubectl("-n", "gpustack-system", "patch", "set", auth, "--type=merge", "-p", `{"spec":{"value":""}}`)
		})
		eventually(30*time.Second, func() (bool, string) {
			v := kubectl("-n", "gpustack-system", "get", "settings.worker.gpustack.ai", auth, "-o", "jsonpath={.spec.value}/{.status.sensitive}")
			return v == "robot:e2e-token/true", "the worker's stored Setting takes the value, and its status marks it sensitive: " + v
		})
		waitTable([][]string{{"NAME", "VALUE", "DEFAULT"}, {auth, "(sensitive)", ""}}, "-n", "gpustack-system", "get", "set", auth)
		Expect(kubectl("-n", "gpustack-system", "get", "set", auth, "-o", "yaml")).To(SatisfyAll(
			ContainSubstring("sensitive: true"), ContainSubstring("value: (sensitive)"), Not(ContainSubstring("spec:")),
			Not(ContainSubstring("e2e-token"))), "the served Setting: masked, and no spec")

		out, err := testenv.Kubectl(cluster.Kubeconfig, "-n", "gpustack-system", "patch", "set", auth, "--type=merge",
			"-p", `{"spec":{"value":"e2e-token"}}`)
		Expect(err).To(HaveOccurred(), "a value with no username is refused: %s", out)
		// The error's first line is the kubectl command, which holds the value; the API server's answer follows.
		_, answer, _ := strings.Cut(err.Error(), "\n")
		Expect(answer).To(SatisfyAll(ContainSubstring(`spec.value: Invalid value: "(sensitive)"`),
			ContainSubstring("want <username>:<password> with a non-empty username"), Not(ContainSubstring(`"e2e-token"`))),
			"the refusal does not quote the credential")
	})
})
