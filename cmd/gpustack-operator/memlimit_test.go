package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSoftMemoryLimit(t *testing.T) {
	type want struct {
		limit int64
		ok    bool
		err   string
	}
	cases := map[string]struct {
		reason string
		env    map[string]string
		want   want
	}{
		"ContainerLimit": {reason: "Nine tenths of the container's 1 GiB.",
			env: map[string]string{containerMemoryLimitEnv: "1073741824"}, want: want{limit: 966367641, ok: true}},
		"GOMEMLIMITStands": {reason: "The user's own GOMEMLIMIT is left to the runtime.",
			env: map[string]string{"GOMEMLIMIT": "300MiB", containerMemoryLimitEnv: "1073741824"}},
		"NoLimit": {reason: "Without a known limit the runtime's default (none) stays."},
		"NotBytes": {reason: "A quantity the chart would not write is an error naming the variable.",
			env:  map[string]string{containerMemoryLimitEnv: "1Gi"},
			want: want{err: `CONTAINER_MEMORY_LIMIT="1Gi" is not a number of bytes`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			limit, ok, err := softMemoryLimit(func(k string) string { return tc.env[k] })
			got := want{limit: limit, ok: ok}
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nsoftMemoryLimit(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
