package kueueconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestSetChartValue(t *testing.T) {
	type args struct{ values, cfg string }
	type want struct {
		out string
		err bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Empty": {
			reason: "An empty block is filled, indented under its key, and what follows is kept.",
			args:   args{values: "kueue:\n  managerConfig:\n    controllerManagerConfigYaml: |-\n\nnext: 1\n", cfg: "a: 1\nb:\n  c: 2\n"},
			want:   want{out: "kueue:\n  managerConfig:\n    controllerManagerConfigYaml: |-\n      a: 1\n      b:\n        c: 2\n\nnext: 1\n"},
		},
		"Replace": {
			reason: "An earlier block, blank lines inside it included, is replaced whole; comments before the key stay.",
			args: args{values: "# says why\ncontrollerManagerConfigYaml: |-\n  old: 1\n\n  older: 2\n# after\nnext: 1\n",
				cfg: "new: 1\n"},
			want: want{out: "# says why\ncontrollerManagerConfigYaml: |-\n  new: 1\n# after\nnext: 1\n"},
		},
		"NoKey": {
			reason: "Values without the key are an error, not a silent no-op.",
			args:   args{values: "kueue:\n  enabled: true\n", cfg: "a: 1\n"},
			want:   want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := SetChartValue([]byte(tc.args.values), []byte(tc.args.cfg))
			if (err != nil) != tc.want.err {
				t.Fatalf("%s\nSetChartValue(...): error %v, want error %v", tc.reason, err, tc.want.err)
			}
			if diff := cmp.Diff(tc.want.out, string(got)); diff != "" {
				t.Errorf("%s\nSetChartValue(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestChartConfiguration checks that what the chart gives its Kueue carries everything Check asks for, and
// that the chart's values hold it as make generate writes it.
func TestChartConfiguration(t *testing.T) {
	data, err := ChartConfiguration()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if missing := Check(cfg); len(missing) != 0 {
		t.Errorf("the chart's Kueue configuration lacks: %v", missing)
	}
	if cfg.ManagedJobsNamespaceSelector == nil || len(cfg.ManagedJobsNamespaceSelector.MatchExpressions) != 1 ||
		!cmp.Equal(workerv1.SystemNamespaces(), cfg.ManagedJobsNamespaceSelector.MatchExpressions[0].Values) {
		t.Errorf("the chart's Kueue manages every namespace but %v: %+v", workerv1.SystemNamespaces(), cfg.ManagedJobsNamespaceSelector)
	}

	path := filepath.Join("..", "..", "package", "helm", "gpustack-operator", "values.yaml")
	values, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := SetChartValue(values, data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(values)); diff != "" {
		t.Errorf("%s is not what make generate writes (run it): -want, +got:\n%s", path, diff)
	}
}
