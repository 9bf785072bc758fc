package deviceplugin

import "testing"

// TestIdentifyByKubelet: GPUSTACK_DEVICE_PLUGIN_IDENTIFY_BY_KUBELET=false tells containers apart by the API
// server alone; unset or true asks the kubelet; anything else is an error naming the variable.
func TestIdentifyByKubelet(t *testing.T) {
	cases := map[string]struct {
		reason  string
		value   string
		want    bool
		wantErr bool
	}{
		"Unset":   {reason: "On by default.", want: true},
		"False":   {reason: "false turns it off.", value: "false"},
		"True":    {reason: "true keeps it.", value: " true ", want: true},
		"Invalid": {reason: "A value that is not a boolean is an error.", value: "kubelet", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := IdentifyByKubelet(func(k string) string {
				if k == EnvIdentifyByKubelet {
					return tc.value
				}
				return ""
			})
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("%s\nIdentifyByKubelet(...) = %t, %v; want %t, error %t", tc.reason, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
