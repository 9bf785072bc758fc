package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// dashboard is what the test reads of a Grafana dashboard.
type dashboard struct {
	Panels []struct {
		Type        string `json:"type"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Targets     []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// TestDashboard checks the example Grafana dashboard against the metrics the worker and the agents serve:
// every series it queries exists (a renamed metric would leave a panel empty), every metric is on some panel,
// and its view variable offers the views the gauges carry.
func TestDashboard(t *testing.T) {
	data, err := os.ReadFile(testenv.Path("examples", "grafana", "gpustack-operator.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	served := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range append([]prometheus.Collector{devicemanager.Cards}, collectors...) {
		ch := make(chan *prometheus.Desc, 10)
		c.Describe(ch)
		close(ch)
		for desc := range ch {
			served[fqName.FindStringSubmatch(desc.String())[1]] = true
		}
	}
	queried := map[string]bool{}
	name := regexp.MustCompile(`gpustack_[a-z_]+`)
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || p.Description == "" {
			t.Errorf("panel %q needs a title and a description that says what to read in it", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, target := range p.Targets {
			for _, m := range name.FindAllString(target.Expr, -1) {
				m = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				if !served[m] {
					t.Errorf("panel %q queries %s, which nothing serves", p.Title, m)
				}
				queried[m] = true
			}
		}
	}
	for m := range served {
		if !queried[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
	for _, v := range d.Templating.List {
		if v.Name != "view" {
			continue
		}
		got := strings.Split(v.Query.(string), ",")
		sort.Strings(got)
		want := []string{ViewCPU, ViewExclusive, ViewPartitioned, ViewShared, ViewSliced}
		sort.Strings(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the view variable offers the gauges' views: -want, +got:\n%s", diff)
		}
	}
}
