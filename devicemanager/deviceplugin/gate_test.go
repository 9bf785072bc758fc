package deviceplugin

import (
	"strings"
	"testing"
)

// TestBoolEnvs: each of the device plugin's switches is on unless its variable says false; a value that is
// not a boolean is an error naming the variable.
func TestBoolEnvs(t *testing.T) {
	readers := map[string]func(func(string) string) (bool, error){
		EnvSlicedAllocateGate: SlicedAllocateGate,
		EnvIdentifyByKubelet:  IdentifyByKubelet,
	}
	cases := map[string]struct {
		reason  string
		value   string
		want    bool
		wantErr bool
	}{
		"Unset":   {reason: "On by default.", want: true},
		"False":   {reason: "false turns it off.", value: "false"},
		"True":    {reason: "true keeps it, spaces around it too.", value: " true ", want: true},
		"Invalid": {reason: "A value that is not a boolean is an error.", value: "sometimes", wantErr: true},
	}
	for env, read := range readers {
		for name, tc := range cases {
			t.Run(env+"/"+name, func(t *testing.T) {
				got, err := read(func(k string) string {
					if k == env {
						return tc.value
					}
					return ""
				})
				if (err != nil) != tc.wantErr || got != tc.want {
					t.Errorf("%s\nreading %s: %t, %v; want %t, error %t", tc.reason, env, got, err, tc.want, tc.wantErr)
				}
				if tc.wantErr && err != nil && !strings.HasPrefix(err.Error(), env) {
					t.Errorf("%s\nreading %s: error %q does not name the variable", tc.reason, env, err)
				}
			})
		}
	}
}
