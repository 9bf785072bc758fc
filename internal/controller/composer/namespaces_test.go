package composer

import "testing"

func TestSystemNamespace(t *testing.T) {
	cases := map[string]struct {
		reason string
		name   string
		want   bool
	}{
		"Operator":       {reason: "The operator's own namespace gets no entrance queue.", name: "gpustack-system", want: true},
		"DeviceManagers": {reason: "Nor does its device managers' namespace.", name: "gpustack-device-manager", want: true},
		"Kueue":          {reason: "Nor Kueue's.", name: "kueue-system", want: true},
		"NFD":            {reason: "Nor NFD's.", name: "node-feature-discovery", want: true},
		"Kube":           {reason: "Nor the cluster's own.", name: "kube-public", want: true},
		"User":           {reason: "A user's namespace gets one.", name: "team-a", want: false},
		"KubeLike":       {reason: "Only the kube- prefix is the cluster's.", name: "kubeflow", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SystemNamespace(tc.name); got != tc.want {
				t.Errorf("%s\nSystemNamespace(%q) = %v, want %v", tc.reason, tc.name, got, tc.want)
			}
		})
	}
}
