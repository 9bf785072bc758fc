package instancepod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestImageRegistry(t *testing.T) {
	cases := map[string]struct {
		reason string
		ref    string
		want   string
	}{
		"DockerHubShort": {
			reason: "An image with no registry is Docker Hub's, named docker.io as the kubelet normalizes it.",
			ref:    "gpustack/ssh-server:v1.3.0",
			want:   "docker.io",
		},
		"DockerHubLibrary": {
			reason: "An official image (no path) is Docker Hub's.",
			ref:    "ubuntu:24.04",
			want:   "docker.io",
		},
		"DockerHubFull": {
			reason: "docker.io named in full.",
			ref:    "docker.io/gpustack/ssh-server:v1.3.0",
			want:   "docker.io",
		},
		"DockerHubLegacy": {
			reason: "index.docker.io is Docker Hub too, which the kubelet names docker.io.",
			ref:    "index.docker.io/gpustack/ssh-server:v1.3.0",
			want:   "docker.io",
		},
		"Host": {
			reason: "A first component with a dot is a registry.",
			ref:    "quay.io/gpustack/ssh-server@sha256:abc",
			want:   "quay.io",
		},
		"HostPort": {
			reason: "A first component with a port is a registry, port included.",
			ref:    "mirror.example.com:5000/gpustack/ssh-server:v1.3.0",
			want:   "mirror.example.com:5000",
		},
		"Localhost": {
			reason: "localhost is a registry even without a port.",
			ref:    "localhost/gpustack/ssh-server",
			want:   "localhost",
		},
		"Capital": {
			reason: "A first component with a capital letter is a registry (no repository path may hold one).",
			ref:    "Mirror/gpustack/ssh-server",
			want:   "Mirror",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ImageRegistry(tc.ref)); diff != "" {
				t.Errorf("%s\nImageRegistry(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRegistryAuthSecretName(t *testing.T) {
	type args struct {
		registry, auth string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"DockerHub": {
			reason: "The Instance's name, then the first 8 hex digits of sha256 over the registry, a NUL and the credential.",
			args:   args{registry: "docker.io", auth: "robot:s3cret"},
			want:   "demo-registry-500d1ff3",
		},
		"OtherRegistry": {
			reason: "Another registry makes another name.",
			args:   args{registry: "mirror.example.com:5000", auth: "robot:s3cret"},
			want:   "demo-registry-d46c774f",
		},
		"Rotated": {
			reason: "Another credential makes another name, which the next Pod uses.",
			args:   args{registry: "docker.io", auth: "robot:rotated"},
			want:   "demo-registry-97ddcc45",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := RegistryAuthSecretName(instance(workerv1.InstanceResources{}), tc.args.registry, tc.args.auth)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nRegistryAuthSecretName(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// pullSecret is a kubernetes.io/dockerconfigjson Secret of the test Instance, as these tests expect it.
func pullSecret(name, config string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{workerv1.LabelInstance: "demo"}},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(config)},
	}
}

func TestRegistryAuthSecret(t *testing.T) {
	type args struct {
		registry, auth string
	}
	type want struct {
		secret *corev1.Secret
		err    string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"DockerHub": {
			reason: "The credential for the registry, with username, password and their base64 auth, of the Instance's namespace and label.",
			args:   args{registry: "docker.io", auth: "robot:s3cret"},
			want: want{secret: pullSecret("demo-registry-500d1ff3",
				`{"auths":{"docker.io":{"username":"robot","password":"s3cret","auth":"cm9ib3Q6czNjcmV0"}}}`)},
		},
		"ColonInPassword": {
			reason: "A password holding a colon is kept whole.",
			args:   args{registry: "docker.io", auth: "robot:pa:ss"},
			want: want{secret: pullSecret("demo-registry-5362ad2e",
				`{"auths":{"docker.io":{"username":"robot","password":"pa:ss","auth":"cm9ib3Q6cGE6c3M="}}}`)},
		},
		"Invalid": {
			reason: "A value that is no <username>:<password> makes no Secret, and is not quoted.",
			args:   args{registry: "docker.io", auth: "s3cret"},
			want:   want{err: "cannot read container-registry-auth: want <username>:<password> with a non-empty username (the value is a credential and is not shown)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			var err error
			got.secret, err = RegistryAuthSecret(instance(workerv1.InstanceResources{}), tc.args.registry, tc.args.auth)
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nRegistryAuthSecret(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBuiltInAuthSecret(t *testing.T) {
	const sshImage = "gpustack/ssh-server:v1.3.0"
	type want struct {
		secret      *corev1.Secret
		pullSecrets []corev1.LocalObjectReference
	}
	cases := map[string]struct {
		reason string
		b      BuiltInImages
		want   want
	}{
		"Unset": {
			reason: "Without container-registry-auth there is no Secret, and the Pod lists only the Instance's own.",
			b:      BuiltInImages{},
			want:   want{pullSecrets: []corev1.LocalObjectReference{{Name: "mine"}}},
		},
		"ImageRegistry": {
			reason: "Without container-registry the credential is for the sidecar image's own registry, Docker Hub; the Pod lists it last.",
			b:      BuiltInImages{Auth: "robot:s3cret", PullSecrets: []string{"mirror-creds"}},
			want: want{secret: pullSecret("demo-registry-500d1ff3",
				`{"auths":{"docker.io":{"username":"robot","password":"s3cret","auth":"cm9ib3Q6czNjcmV0"}}}`),
				pullSecrets: []corev1.LocalObjectReference{{Name: "mine"}, {Name: "mirror-creds"}, {Name: "demo-registry-500d1ff3"}}},
		},
		"ContainerRegistry": {
			reason: "With container-registry the credential is for that registry, which the sidecar is pulled from.",
			b:      BuiltInImages{Registry: "mirror.example.com:5000", Namespace: "mirrors", Auth: "robot:s3cret"},
			want: want{secret: pullSecret("demo-registry-d46c774f",
				`{"auths":{"mirror.example.com:5000":{"username":"robot","password":"s3cret","auth":"cm9ib3Q6czNjcmV0"}}}`),
				pullSecrets: []corev1.LocalObjectReference{{Name: "mine"}, {Name: "demo-registry-d46c774f"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inst := instance(workerv1.InstanceResources{})
			inst.Spec.ImagePullSecret = "mine"
			secret, err := tc.b.AuthSecret(inst, sshImage)
			if err != nil {
				t.Fatalf("AuthSecret(...): %v", err)
			}
			pod, err := Pod(inst, genericType(), Options{SSHImage: sshImage, BuiltIn: tc.b})
			if err != nil {
				t.Fatalf("Pod(...): %v", err)
			}
			got := want{secret: secret, pullSecrets: pod.Spec.ImagePullSecrets}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nAuthSecret(...), Pod(...).Spec.ImagePullSecrets: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDispatchedAuthSecret(t *testing.T) {
	const dockerHubSecret = "demo-registry-500d1ff3"
	// dispatched is the Pod a member gets: the sidecar image and the pull secrets the manager rendered.
	dispatched := func(sshImage string, pullSecrets ...string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: MainContainer, Image: "ubuntu:24.04"},
			{Name: SSHContainer, Image: sshImage}}}}
		for _, s := range pullSecrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
		}
		return p
	}
	type args struct {
		pod  *corev1.Pod
		auth string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   *corev1.Secret
	}{
		"SameCredential": {
			reason: "The member's credential gives the name the Pod lists: the member makes that Secret.",
			args:   args{pod: dispatched("gpustack/ssh-server:v1.3.0", "mine", dockerHubSecret), auth: "robot:s3cret"},
			want: pullSecret(dockerHubSecret,
				`{"auths":{"docker.io":{"username":"robot","password":"s3cret","auth":"cm9ib3Q6czNjcmV0"}}}`),
		},
		"ManagerRegistry": {
			reason: "The registry is the one the manager rendered into the sidecar's image.",
			args:   args{pod: dispatched("mirror.example.com:5000/mirrors/ssh-server:v1.3.0", "demo-registry-d46c774f"), auth: "robot:s3cret"},
			want: pullSecret("demo-registry-d46c774f",
				`{"auths":{"mirror.example.com:5000":{"username":"robot","password":"s3cret","auth":"cm9ib3Q6czNjcmV0"}}}`),
		},
		"OtherCredential": {
			reason: "The Pod lists another credential's Secret (the manager's is not the member's): the member makes none.",
			args:   args{pod: dispatched("gpustack/ssh-server:v1.3.0", dockerHubSecret), auth: "robot:rotated"},
		},
		"NoneListed": {
			reason: "A Pod the manager rendered without container-registry-auth lists none: the member makes none.",
			args:   args{pod: dispatched("gpustack/ssh-server:v1.3.0", "mine"), auth: "robot:s3cret"},
		},
		"MemberUnset": {
			reason: "A member without container-registry-auth makes none.",
			args:   args{pod: dispatched("gpustack/ssh-server:v1.3.0", dockerHubSecret)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := DispatchedAuthSecret(instance(workerv1.InstanceResources{}), tc.args.pod, tc.args.auth)
			if err != nil {
				t.Fatalf("DispatchedAuthSecret(...): %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDispatchedAuthSecret(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
