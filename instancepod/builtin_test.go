package instancepod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestBuiltInImage(t *testing.T) {
	type args struct {
		b   BuiltInImages
		ref string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"Unset": {
			reason: "Without a registry or namespace the image is pulled as it is named",
			args:   args{ref: "gpustack/ssh-server:v1.3.0"},
			want:   "gpustack/ssh-server:v1.3.0",
		},
		"Registry": {
			reason: "A registry is put in front of a Docker Hub image",
			args:   args{b: BuiltInImages{Registry: "mirror.example.com:5000"}, ref: "gpustack/ssh-server:v1.3.0"},
			want:   "mirror.example.com:5000/gpustack/ssh-server:v1.3.0",
		},
		"ReplaceRegistry": {
			reason: "A registry replaces the one the image names",
			args:   args{b: BuiltInImages{Registry: "mirror.example.com/"}, ref: "quay.io/gpustack/ssh-server@sha256:abc"},
			want:   "mirror.example.com/gpustack/ssh-server@sha256:abc",
		},
		"Namespace": {
			reason: "A namespace replaces the path between the registry and the name",
			args:   args{b: BuiltInImages{Namespace: "team/mirrors"}, ref: "quay.io/gpustack/ssh-server:v1.3.0"},
			want:   "quay.io/team/mirrors/ssh-server:v1.3.0",
		},
		"Both": {
			reason: "Registry and namespace together, on an image of Docker Hub's library",
			args:   args{b: BuiltInImages{Registry: "localhost:5000", Namespace: "gpustack"}, ref: "ubuntu:24.04"},
			want:   "localhost:5000/gpustack/ubuntu:24.04",
		},
		"Localhost": {
			reason: "localhost is a registry even without a port",
			args:   args{b: BuiltInImages{Namespace: "x"}, ref: "localhost/gpustack/ssh-server"},
			want:   "localhost/x/ssh-server",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.args.b.Image(tc.args.ref)); diff != "" {
				t.Errorf("%s\nImage(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestBuiltInImagesInPod(t *testing.T) {
	inst := instance(workerv1.InstanceResources{})
	inst.Spec.ImagePullSecret = "mine"
	b := BuiltInImages{Registry: "mirror.example.com", PullSecrets: []string{"mirror-creds", "mine"}, PullPolicy: corev1.PullAlways}
	pod, err := Pod(inst, genericType(), Options{SSHImage: "gpustack/ssh-server:v1.3.0", BuiltIn: b})
	if err != nil {
		t.Fatal(err)
	}
	sshd := pod.Spec.Containers[1]
	if diff := cmp.Diff([]string{"mirror.example.com/gpustack/ssh-server:v1.3.0", "Always"}, []string{sshd.Image, string(sshd.ImagePullPolicy)}); diff != "" {
		t.Errorf("The SSH sidecar is pulled from the mirror with the setting's policy: -want, +got:\n%s", diff)
	}
	if got := pod.Spec.Containers[0].Image; got != "ubuntu:24.04" {
		t.Errorf("The user's own image is never rewritten: %q", got)
	}
	want := []corev1.LocalObjectReference{{Name: "mine"}, {Name: "mirror-creds"}}
	if diff := cmp.Diff(want, pod.Spec.ImagePullSecrets); diff != "" {
		t.Errorf("The Pod pulls with the Instance's secret and the built-in ones, once each: -want, +got:\n%s", diff)
	}
}

func TestSplitList(t *testing.T) {
	if diff := cmp.Diff([]string{"a", "b"}, SplitList(" a, ,b ,")); diff != "" {
		t.Errorf("SplitList(...): -want, +got:\n%s", diff)
	}
}

func TestAccessAddresses(t *testing.T) {
	type args struct {
		hostIPs          []string
		static, wildcard string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   []string
	}{
		"NotScheduled": {reason: "No node, no address", args: args{static: "gpu.example.com"}, want: nil},
		"Static":       {reason: "A static address wins", args: args{hostIPs: []string{"10.0.0.5"}, static: "gpu.example.com", wildcard: "nip.io"}, want: []string{"gpu.example.com"}},
		"Wildcard":     {reason: "A wildcard DNS names each host IP", args: args{hostIPs: []string{"10.0.0.5", "fd00::5"}, wildcard: "nip.io"}, want: []string{"10.0.0.5.nip.io", "fd00::5.nip.io"}},
		"HostIPs":      {reason: "Without either setting, the host IPs", args: args{hostIPs: []string{"10.0.0.5"}}, want: []string{"10.0.0.5"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := AccessAddresses(tc.args.hostIPs, tc.args.static, tc.args.wildcard)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nAccessAddresses(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAllocations(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Annotations = map[string]string{"device.gpustack.ai/accelerator.allocated": `{"main":["GPU-b","GPU-a"],"sshd":["GPU-a"]}`}
	pod.Spec.Containers = []corev1.Container{
		{Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}},
		{Name: "sshd"},
	}
	if diff := cmp.Diff([]string{"GPU-a", "GPU-b"}, Allocations(pod)); diff != "" {
		t.Errorf("The claiming container's cards, sorted: -want, +got:\n%s", diff)
	}
}
