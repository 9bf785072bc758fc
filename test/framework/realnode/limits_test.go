package realnode

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRaiseLimit(t *testing.T) {
	type want struct {
		limit string
		err   bool
	}
	cases := map[string]struct {
		reason string
		have   string
		want   want
	}{
		"Below": {
			reason: "a limit below what the nodes need is raised to it",
			have:   "128\n",
			want:   want{limit: "320"},
		},
		"Equal": {
			reason: "a limit that is enough is left as it is",
			have:   "320\n",
			want:   want{limit: "320\n"},
		},
		"Above": {
			reason: "a higher limit is never lowered",
			have:   "8192\n",
			want:   want{limit: "8192\n"},
		},
		"Garbage": {
			reason: "a limit that is no number is an error, and is left as it is",
			have:   "many\n",
			want:   want{limit: "many\n", err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "max_user_instances")
			if err := os.WriteFile(path, []byte(tc.have), 0o644); err != nil {
				t.Fatal(err)
			}
			err := raiseLimit(path, 320)
			raw, _ := os.ReadFile(path)
			got := want{limit: string(raw), err: err != nil}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nraiseLimit(%q, 320): -want, +got:\n%s", tc.reason, tc.have, diff)
			}
		})
	}
}
