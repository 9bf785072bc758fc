package instancepod

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// AuthorizedKeysKey is the key of an InstanceSSHPublicKey's Secret: the file its sidecar finds in
// /var/run/sshd-authorized-keys.
const AuthorizedKeysKey = "authorized_keys"

// CheckAuthorizedKeys returns an error naming the first line of data that is no public key in OpenSSH's
// authorized_keys format; blank lines and comments are skipped, and at least one key must be there.
func CheckAuthorizedKeys(data string) error {
	keys := 0
	scanner := bufio.NewScanner(strings.NewReader(data))
	scanner.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for line := 1; scanner.Scan(); line++ {
		text := strings.TrimSpace(scanner.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		// The library's own error says little more than "no key found".
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(text)); err != nil {
			return errors.Errorf("spec.data line %d is no SSH public key: want one key a line, such as ssh-ed25519 AAAA... user@host", line)
		}
		keys++
	}
	if keys == 0 {
		return errors.New("spec.data holds no SSH public key: want one key a line, such as ssh-ed25519 AAAA... user@host")
	}
	return nil
}

// AuthorizedKeysSecret returns the Secret that backs an InstanceSSHPublicKey, of its namespace and name.
func AuthorizedKeysSecret(key *workerv1.InstanceSSHPublicKey) (*corev1.Secret, error) {
	if err := CheckAuthorizedKeys(key.Spec.Data); err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{AuthorizedKeysKey: []byte(key.Spec.Data)},
	}, nil
}

// dockerConfig is the content of a kubernetes.io/dockerconfigjson Secret.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// dockerConfigJSON returns the .dockerconfigjson of one registry's credentials, as kubectl create secret
// docker-registry writes it: the kubelet reads username and password, other clients the auth field.
func dockerConfigJSON(registry, username, password string) ([]byte, error) {
	config, err := json.Marshal(dockerConfig{Auths: map[string]dockerAuth{registry: {
		Username: username, Password: password,
		Auth: base64.StdEncoding.EncodeToString([]byte(username + ":" + password)),
	}}})
	return config, errors.Wrap(err, "cannot encode the registry credentials")
}

// PullSecret returns the kubernetes.io/dockerconfigjson Secret that backs an InstanceImagePullSecret, of its
// namespace and name: its credentials for its registry.
func PullSecret(p *workerv1.InstanceImagePullSecret) (*corev1.Secret, error) {
	config, err := dockerConfigJSON(p.Spec.Registry, p.Spec.Username, p.Spec.Password)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: config},
	}, nil
}
