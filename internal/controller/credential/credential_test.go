package credential_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/credential"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

var suite testenv.EnvtestSuite

func TestCredential(t *testing.T) { testenv.RunSuite(t, "credential controller suite", &suite) }

// publicKey is a public key in OpenSSH's format.
const publicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM9lYKVqf7WXLbWEPV8YJK8sA83WLCy436PBqvlKmDkc user@host\n"

func sshKey(name, data string) *workerv1.InstanceSSHPublicKey {
	return &workerv1.InstanceSSHPublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: workerv1.InstanceSSHPublicKeySpec{Data: data}}
}

// outcome is what a spec reads back: the Secret's type and data, whether the object owns it, and the status
// (the condition's time and generation left out).
type outcome struct {
	Type   corev1.SecretType
	Data   map[string][]byte
	Owned  bool
	Status workerv1.CredentialStatus
}

func ready(status metav1.ConditionStatus, reason, message string) workerv1.CredentialStatus {
	st := workerv1.CredentialStatus{Conditions: []metav1.Condition{{Type: workerv1.ConditionReady, Status: status, Reason: reason, Message: message}}}
	if status == metav1.ConditionTrue {
		st.Secret = "placeholder"
	}
	return st
}

var ignoreTimes = cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime", "ObservedGeneration")

// reconcile runs the reconciler on obj twice (the second must write nothing) and returns the outcome.
func reconcileTwice(r *credential.Reconciler, obj client.Object, status func() workerv1.CredentialStatus) outcome {
	GinkgoHelper()
	ctx := context.Background()
	c, writes := testenv.CountWrites(suite.Client)
	r.Client = c
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	_, err := r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	writes.ExpectConverged(func() error { _, err := r.Reconcile(ctx, req); return err })

	Expect(suite.Client.Get(ctx, req.NamespacedName, obj)).To(Succeed())
	got := outcome{Status: status()}
	secret := &corev1.Secret{}
	if err := suite.Client.Get(ctx, req.NamespacedName, secret); err == nil {
		DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), secret) })
		got.Type, got.Data, got.Owned = secret.Type, secret.Data, metav1.IsControlledBy(secret, obj)
	}
	if got.Status.Secret != "" {
		Expect(got.Status.Secret).To(Equal(obj.GetName()), "status.secret names the object's own Secret")
		got.Status.Secret = "placeholder"
	}
	return got
}

var _ = Describe("InstanceSSHPublicKey", func() {
	DescribeTable("is backed by a Secret of its name that it owns, or says why not",
		func(key *workerv1.InstanceSSHPublicKey, inTheWay *corev1.Secret, want outcome) {
			if inTheWay != nil {
				suite.Create(inTheWay)
			}
			suite.Create(key)
			got := reconcileTwice(credential.SSHPublicKeys(nil), key, func() workerv1.CredentialStatus { return key.Status })
			Expect(cmp.Diff(want, got, ignoreTimes)).To(BeEmpty(), "Reconcile(...): -want, +got")
		},
		Entry("valid keys: an Opaque Secret with authorized_keys, owned by the key; Ready",
			sshKey("alice", publicKey), nil,
			outcome{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"authorized_keys": []byte(publicKey)}, Owned: true,
				Status: ready(metav1.ConditionTrue, workerv1.ReasonSecretCreated, "Secret alice was made from the spec")}),
		Entry("a Secret of the name already there: used as it is, never overwritten, and the condition says so",
			sshKey("bob", publicKey), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bob"},
				Data: map[string][]byte{"authorized_keys": []byte("# someone else's\n")}},
			outcome{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"authorized_keys": []byte("# someone else's\n")},
				Status: ready(metav1.ConditionTrue, workerv1.ReasonSecretFound, "a Secret named bob was already in namespace default: "+
					"Instances use it as it is, and this spec is not written into it; to have it made from the spec, delete the Secret and re-create this object")}),
		Entry("data that is no key: no Secret, and the condition names the line",
			sshKey("carol", "AAAA not a key\n"), nil,
			outcome{Status: ready(metav1.ConditionFalse, workerv1.ReasonInvalidSpec,
				"spec.data line 1 is no SSH public key: want one key a line, such as ssh-ed25519 AAAA... user@host")}),
	)

	It("refuses a change to its keys: make another or re-create it", func() {
		key := sshKey("erin", publicKey)
		suite.Create(key)
		key.Spec.Data = "# changed\n" + publicKey
		Expect(suite.Client.Update(context.Background(), key)).To(MatchError(ContainSubstring("an InstanceSSHPublicKey is immutable")))
	})
})

var _ = It("backs an InstanceImagePullSecret with a docker-config Secret of its name that it owns", func() {
	pull := &workerv1.InstanceImagePullSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "registry"},
		Spec: workerv1.InstanceImagePullSecretSpec{Registry: "registry.example.com:5000", Username: "robot", Password: "s3cret"}}
	suite.Create(pull)
	got := reconcileTwice(credential.ImagePullSecrets(nil), pull, func() workerv1.CredentialStatus { return pull.Status })
	Expect(got.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
	Expect(string(got.Data[corev1.DockerConfigJsonKey])).To(ContainSubstring(`"registry.example.com:5000":{"username":"robot"`))
	Expect(got.Owned).To(BeTrue(), "the Secret is the pull secret's")
	Expect(cmp.Diff(ready(metav1.ConditionTrue, workerv1.ReasonSecretCreated, "Secret registry was made from the spec"), got.Status, ignoreTimes)).To(BeEmpty())
})
