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

func TestCheck(t *testing.T) {
	type args struct {
		name, value string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"RegistryAuth": {
			reason: "container-registry-auth takes <username>:<password>.",
			args:   args{name: workerv1.SettingContainerRegistryAuth, value: "robot:s3cret"},
		},
		"RegistryAuthColonInPassword": {
			reason: "A password may hold colons: the first one splits.",
			args:   args{name: workerv1.SettingContainerRegistryAuth, value: "robot:pa:ss"},
		},
		"RegistryAuthDefault": {
			reason: `"" returns container-registry-auth to its default, none.`,
			args:   args{name: workerv1.SettingContainerRegistryAuth, value: ""},
		},
		"RegistryAuthNoColon": {
			reason: "A value without a colon is refused, naming the setting and not quoting the value.",
			args:   args{name: workerv1.SettingContainerRegistryAuth, value: "s3cret-token"},
			want:   "setting container-registry-auth: want <username>:<password> with a non-empty username (the value is a credential and is not shown)",
		},
		"RegistryAuthNoUsername": {
			reason: "A value with no username is refused, not quoting the value.",
			args:   args{name: workerv1.SettingContainerRegistryAuth, value: " :s3cret "},
			want:   "setting container-registry-auth: want <username>:<password> with a non-empty username (the value is a credential and is not shown)",
		},
		"NotBoolean": {
			reason: "A setting that is not sensitive quotes the value it refuses.",
			args:   args{name: workerv1.SettingNodeManagementManual, value: "yes"},
			want:   `setting node-management-manual: "yes" is not true or false`,
		},
		"Unknown": {
			reason: "An unknown setting is refused.",
			args:   args{name: "container-registry-password", value: "s3cret"},
			want:   `unknown setting "container-registry-password"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if err := Check(tc.args.name, tc.args.value); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestShown(t *testing.T) {
	cases := map[string]struct {
		reason string
		name   string
		value  string
		want   string
	}{
		"Sensitive": {
			reason: "A sensitive setting's value is shown as the settings API reads it back.",
			name:   workerv1.SettingContainerRegistryAuth, value: "robot:s3cret", want: "(sensitive)",
		},
		"Plain": {
			reason: "Any other value is quoted.",
			name:   workerv1.SettingContainerRegistry, value: "mirror.example.com", want: `"mirror.example.com"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, _ := workerv1.LookupSetting(tc.name)
			if diff := cmp.Diff(tc.want, Shown(d, tc.value)); diff != "" {
				t.Errorf("%s\nShown(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestEnvSeedsSensitive(t *testing.T) {
	type want struct {
		seeds    map[string]string
		problems []string
	}
	cases := map[string]struct {
		reason string
		env    map[string]string
		want   want
	}{
		"Seeded": {
			reason: "A valid credential in GPUSTACK_CONTAINER_REGISTRY_AUTH seeds the Setting.",
			env:    map[string]string{"GPUSTACK_CONTAINER_REGISTRY_AUTH": "robot:s3cret"},
			want:   want{seeds: map[string]string{workerv1.SettingContainerRegistryAuth: "robot:s3cret"}},
		},
		"Refused": {
			reason: "An invalid credential is reported, the problem (which the worker logs) not quoting it.",
			env:    map[string]string{"GPUSTACK_CONTAINER_REGISTRY_AUTH": "s3cret"},
			want: want{seeds: map[string]string{}, problems: []string{"GPUSTACK_CONTAINER_REGISTRY_AUTH=(sensitive): setting container-registry-auth: " +
				"want <username>:<password> with a non-empty username (the value is a credential and is not shown); Setting container-registry-auth starts at its default"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			seeds, problems := envSeeds(func(k string) string { return tc.env[k] })
			got := want{seeds: seeds, problems: problems}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nenvSeeds(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
