package instancepod

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// ed25519Key is a public key in OpenSSH's format.
const ed25519Key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM9lYKVqf7WXLbWEPV8YJK8sA83WLCy436PBqvlKmDkc user@host"

func TestCheckAuthorizedKeys(t *testing.T) {
	cases := map[string]struct {
		reason string
		data   string
		want   string
	}{
		"OneKey": {
			reason: "One key a line is the format.",
			data:   ed25519Key + "\n",
		},
		"CommentsOptionsAndBlanks": {
			reason: "Comments and blank lines are skipped; a key with sshd's options before it is a key.",
			data:   "# laptop\n\n" + `no-port-forwarding,command="/bin/true" ` + ed25519Key + "\n",
		},
		"NotAKey": {
			reason: "A line that is no key is named by its number.",
			data:   ed25519Key + "\nssh-ed25519 not-base64\n",
			want:   "spec.data line 2 is no SSH public key: want one key a line, such as ssh-ed25519 AAAA... user@host",
		},
		"PrivateKey": {
			reason: "A private key pasted by mistake is refused, not served.",
			data:   "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
			want:   "spec.data line 1 is no SSH public key: want one key a line, such as ssh-ed25519 AAAA... user@host",
		},
		"OnlyComments": {
			reason: "Comments alone let no one in: at least one key.",
			data:   "# nothing yet\n",
			want:   "spec.data holds no SSH public key: want one key a line, such as ssh-ed25519 AAAA... user@host",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if err := CheckAuthorizedKeys(tc.data); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheckAuthorizedKeys(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAuthorizedKeysSecret(t *testing.T) {
	key := &workerv1.InstanceSSHPublicKey{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "alice"},
		Spec: workerv1.InstanceSSHPublicKeySpec{Data: ed25519Key + "\n"}}
	got, err := AuthorizedKeysSecret(key)
	if err != nil {
		t.Fatalf("AuthorizedKeysSecret(...): %v", err)
	}
	want := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "alice"}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"authorized_keys": []byte(ed25519Key + "\n")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("The Secret has the key's name and the keys under the file name the sidecar reads.\nAuthorizedKeysSecret(...): -want, +got:\n%s", diff)
	}
	key.Spec.Data = "not a key"
	if _, err := AuthorizedKeysSecret(key); err == nil {
		t.Errorf("AuthorizedKeysSecret(...) of data that is no key: want an error, got none")
	}
}

func TestPullSecret(t *testing.T) {
	p := &workerv1.InstanceImagePullSecret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "registry"},
		Spec: workerv1.InstanceImagePullSecretSpec{Registry: "registry.example.com:5000", Username: "robot", Password: "s3cret"}}
	got, err := PullSecret(p)
	if err != nil {
		t.Fatalf("PullSecret(...): %v", err)
	}
	if got.Namespace != "team-a" || got.Name != "registry" || got.Type != corev1.SecretTypeDockerConfigJson {
		t.Errorf("PullSecret(...): want team-a/registry of type %s, got %s/%s of type %s", corev1.SecretTypeDockerConfigJson, got.Namespace, got.Name, got.Type)
	}
	var config map[string]map[string]map[string]string
	if err := json.Unmarshal(got.Data[corev1.DockerConfigJsonKey], &config); err != nil {
		t.Fatalf("PullSecret(...): %s is no JSON: %v", corev1.DockerConfigJsonKey, err)
	}
	// The auth field is base64 of user:password, which is what the kubelet and containerd read.
	want := map[string]map[string]map[string]string{"auths": {"registry.example.com:5000": {
		"username": "robot", "password": "s3cret", "auth": "cm9ib3Q6czNjcmV0"}}}
	if diff := cmp.Diff(want, config); diff != "" {
		t.Errorf("The docker config names the registry with its credentials.\nPullSecret(...): -want, +got:\n%s", diff)
	}
}
