package v1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitRegistryAuth(t *testing.T) {
	type want struct {
		username, password, err string
	}
	refused := want{err: "want <username>:<password> with a non-empty username (the value is a credential and is not shown)"}
	cases := map[string]struct {
		reason string
		auth   string
		want   want
	}{
		"UsernamePassword": {
			reason: "A username and a password, split at the colon.",
			auth:   "robot:s3cret",
			want:   want{username: "robot", password: "s3cret"},
		},
		"ColonInPassword": {
			reason: "The first colon splits, as Docker splits its auth field: a password may hold colons.",
			auth:   "robot:pa:ss",
			want:   want{username: "robot", password: "pa:ss"},
		},
		"EmptyPassword": {
			reason: "Only the username must be there.",
			auth:   "robot:",
			want:   want{username: "robot"},
		},
		"NoColon": {
			reason: "A value without a colon is no <username>:<password>, and the refusal does not quote it.",
			auth:   "s3cret-token",
			want:   refused,
		},
		"NoUsername": {
			reason: "A value with no username is refused.",
			auth:   ":s3cret",
			want:   refused,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			var err error
			got.username, got.password, err = SplitRegistryAuth(tc.auth)
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nSplitRegistryAuth(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
