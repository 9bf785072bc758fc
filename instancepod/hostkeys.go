package instancepod

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"golang.org/x/crypto/ssh"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// Keys of the host-keys Secret, and where the SSH sidecar finds them: OpenSSH's default host key path, so
// sshd uses the kept key and a start-up `ssh-keygen -A` leaves it alone.
const (
	HostKeyFile       = "ssh_host_ed25519_key"
	HostPublicKeyFile = HostKeyFile + ".pub"
	hostKeyDir        = "/etc/ssh/"
)

// HostKeysSecretName is the Secret that keeps an Instance's SSH host key, so the host key a client trusted
// stays the same when the Pod restarts or moves to another node.
func HostKeysSecretName(inst *workerv1.Instance) string { return inst.Name + "-ssh-host-keys" }

// HostKeysSecret returns the Instance's host-keys Secret holding a new Ed25519 key pair in OpenSSH's
// formats.
func HostKeysSecret(inst *workerv1.Instance) (*corev1.Secret, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, errors.Wrap(err, "cannot generate an SSH host key")
	}
	block, err := ssh.MarshalPrivateKey(priv, inst.Namespace+"/"+inst.Name)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode the SSH host key")
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode the SSH host public key")
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: HostKeysSecretName(inst),
			Labels: map[string]string{workerv1.LabelInstance: inst.Name}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{HostKeyFile: pem.EncodeToMemory(block), HostPublicKeyFile: ssh.MarshalAuthorizedKey(sshPub)},
	}, nil
}

// hostKeys returns the sshd volume of the host-keys Secret and its mounts over OpenSSH's default paths.
func hostKeys(inst *workerv1.Instance) (corev1.Volume, []corev1.VolumeMount) {
	v := corev1.Volume{Name: "ssh-host-keys", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: HostKeysSecretName(inst), DefaultMode: ptr.To[int32](0o600),
		Items: []corev1.KeyToPath{{Key: HostKeyFile, Path: HostKeyFile}, {Key: HostPublicKeyFile, Path: HostPublicKeyFile, Mode: ptr.To[int32](0o644)}},
	}}}
	var mounts []corev1.VolumeMount
	for _, f := range []string{HostKeyFile, HostPublicKeyFile} {
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: hostKeyDir + f, SubPath: f, ReadOnly: true})
	}
	return v, mounts
}
