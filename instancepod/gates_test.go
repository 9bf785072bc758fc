package instancepod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestPodGates(t *testing.T) {
	privileged := corev1.Container{Name: "main", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}
	plain := corev1.Container{Name: "sidecar", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(false)}}
	hostPath := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}}
	type args struct {
		spec                        corev1.PodSpec
		privilegedAllowed, hostPath bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   []string
	}{
		"Plain": {
			reason: "A Pod that takes nothing across the node boundary passes whatever the settings say.",
			args:   args{spec: corev1.PodSpec{Containers: []corev1.Container{plain}}},
		},
		"Privileged": {
			reason: "A privileged container needs instance-privileged-allowed, named at its path.",
			args:   args{spec: corev1.PodSpec{Containers: []corev1.Container{plain, privileged}}},
			want:   []string{`spec.containers[1].securityContext.privileged: Forbidden: ` + privilegedForbidden},
		},
		"PrivilegedInit": {
			reason: "So does a privileged init container, named once however many containers are.",
			args:   args{spec: corev1.PodSpec{InitContainers: []corev1.Container{privileged}, Containers: []corev1.Container{privileged}}},
			want:   []string{`spec.initContainers[0].securityContext.privileged: Forbidden: ` + privilegedForbidden},
		},
		"HostPath": {
			reason: "A host path volume needs instance-host-path-volume-allowed.",
			args:   args{spec: corev1.PodSpec{Containers: []corev1.Container{privileged}, Volumes: []corev1.Volume{{Name: "tmp"}, hostPath}}, privilegedAllowed: true},
			want:   []string{`spec.volumes[1].hostPath: Forbidden: ` + hostPathForbidden},
		},
		"Allowed": {
			reason: "Both allowed, both pass.",
			args:   args{spec: corev1.PodSpec{Containers: []corev1.Container{privileged}, Volumes: []corev1.Volume{hostPath}}, privilegedAllowed: true, hostPath: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range PodGates(&tc.args.spec, tc.args.privilegedAllowed, tc.args.hostPath) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPodGates(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
