package envvar_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/envvar"
)

func TestBool(t *testing.T) {
	type want struct {
		on  bool
		err string
	}
	cases := map[string]struct {
		reason string
		value  string
		def    bool
		want   want
	}{
		"UnsetTrue":  {reason: "Unset, the default holds.", def: true, want: want{on: true}},
		"UnsetFalse": {reason: "Unset, the default holds, false too.", want: want{on: false}},
		"Blank":      {reason: "Blanks are unset.", value: "  ", def: true, want: want{on: true}},
		"False":      {reason: "false turns a default of true off.", value: "false", def: true, want: want{on: false}},
		"True":       {reason: "true turns a default of false on.", value: " true ", want: want{on: true}},
		"Invalid":    {reason: "A value that is no boolean names the variable.", value: "yes", def: true, want: want{err: `GPUSTACK_X="yes": want true or false`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			on, err := envvar.Bool(func(k string) string {
				if k == "GPUSTACK_X" {
					return tc.value
				}
				return ""
			}, "GPUSTACK_X", tc.def)
			got := want{on: on}
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nBool(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAbsPath(t *testing.T) {
	type want struct {
		path string
		err  string
	}
	cases := map[string]struct {
		reason string
		value  string
		want   want
	}{
		"Unset":    {reason: "Unset, the default holds.", want: want{path: "/var/lib/gpustack"}},
		"Set":      {reason: "An absolute path is taken, cleaned.", value: "/data/gpustack/", want: want{path: "/data/gpustack"}},
		"Relative": {reason: "A relative path names the variable.", value: "data", want: want{err: `GPUSTACK_DIR="data": want an absolute path`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path, err := envvar.AbsPath(func(string) string { return tc.value }, "GPUSTACK_DIR", "/var/lib/gpustack")
			got := want{path: path}
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nAbsPath(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
