package settings

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestParse(t *testing.T) {
	type want struct {
		grace time.Duration
		err   string
	}
	cases := map[string]struct {
		reason    string
		overrides map[string]string
		want      want
	}{
		"Default": {
			reason: "With no override a duration setting has its built-in default.",
			want:   want{grace: 5 * time.Minute},
		},
		"Duration": {
			reason:    "A duration as Go writes one is taken.",
			overrides: map[string]string{workerv1.SettingInstanceTypeDrainGracePeriod: "1h30m"},
			want:      want{grace: 90 * time.Minute},
		},
		"NoUnit": {
			reason:    "A number with no unit is no duration, and names the setting.",
			overrides: map[string]string{workerv1.SettingInstanceTypeDrainGracePeriod: "300"},
			want:      want{err: `setting instance-type-drain-grace-period: "300" is not a duration such as 90s, 5m or 1h30m`},
		},
		"Negative": {
			reason:    "A negative duration is refused.",
			overrides: map[string]string{workerv1.SettingInstanceTypeDrainGracePeriod: "-1m"},
			want:      want{err: `setting instance-type-drain-grace-period: "-1m" is not a duration such as 90s, 5m or 1h30m`},
		},
		"NotBoolean": {
			reason:    "A boolean setting takes true or false.",
			overrides: map[string]string{workerv1.SettingInstanceTypeDrainWhenNoFlavors: "yes"},
			want:      want{err: `setting instance-type-drain-when-no-flavors: "yes" is not true or false`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := Parse(tc.overrides)
			got := want{}
			if err != nil {
				got.err = err.Error()
			} else {
				got.grace = v.Functions().DrainGracePeriod.Duration
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nParse(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
