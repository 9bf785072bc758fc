package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
)

// An Instance that uses each of its own kinds at once: its SSH key as an InstanceSSHPublicKey, its pull
// credential as an InstanceImagePullSecret and its workspace as an InstancePersistentVolume of the chart's
// local-path InstancePersistentVolumeType. It is Ready; its Pod uses the Secrets the credentials are backed by
// and the volume's claim, which the chart's provisioner bound on the node the Pod runs on.
var _ = It("runs an Instance with an InstanceSSHPublicKey, an InstanceImagePullSecret and a volume of an InstancePersistentVolumeType", func() {
	ctx := context.Background()
	const name = "own-kinds"
	key := &workerv1.InstanceSSHPublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-key"},
		Spec: workerv1.InstanceSSHPublicKeySpec{Data: sshKey(sshDir)}}
	pull := &workerv1.InstanceImagePullSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-pull"},
		Spec: workerv1.InstanceImagePullSecretSpec{Registry: "docker.io", Username: "demo", Password: "demo-token"}}
	volume := &workerv1.InstancePersistentVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-workspace"},
		Spec: workerv1.InstancePersistentVolumeSpec{Type: "local-path", Capacity: resource.MustParse("1Gi"), AccessMode: workerv1.ReadWriteOnce}}
	for _, o := range []client.Object{key, pull, volume} {
		Expect(k.Create(ctx, o)).To(Succeed())
		DeferCleanup(func() { _ = k.Delete(context.Background(), o) })
	}
	runReady(builders.MakeInstance("default", name, genericPool).
		SSHPublicKey(key.Name).ImagePullSecret(pull.Name).PersistentWorkspace(volume.Name).Obj())

	secrets := map[string]string{}
	for kind, n := range map[string]string{"instancesshpublickey": key.Name, "instanceimagepullsecret": pull.Name} {
		secrets[kind] = kubectl("get", kind, n, "-n", "default", "-o", "jsonpath={.status.secret}")
	}
	got := kubectl("get", "pod", name, "-n", "default", "-o", `jsonpath={.spec.imagePullSecrets[*].name}/`+
		`{.spec.volumes[?(@.name=="ssh-authorized-keys")].secret.secretName}/`+
		`{.spec.volumes[?(@.name=="workspace")].persistentVolumeClaim.claimName}`)
	parts := strings.Split(got, "/")
	Expect(parts).To(HaveLen(3), "the Pod's pull secrets, key Secret and workspace claim: %q", got)
	Expect(strings.Fields(parts[0])).To(ContainElement(secrets["instanceimagepullsecret"]), "the Pod pulls with the InstanceImagePullSecret's Secret")
	Expect(parts[1]).To(Equal(secrets["instancesshpublickey"]), "the sidecar reads the InstanceSSHPublicKey's Secret")
	Expect(parts[2]).To(Equal(volume.Name), "the workspace is the volume's claim")
	eventually(time.Minute, func() (bool, string) {
		got := kubectl("get", "instancepersistentvolume", volume.Name, "-n", "default", "-o", "jsonpath={.status.phase} {.status.volume}")
		return strings.HasPrefix(got, "Bound pvc-"), fmt.Sprintf("the volume of type local-path is bound: %q", got)
	})
})
