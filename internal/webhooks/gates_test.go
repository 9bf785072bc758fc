package webhooks

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/settings"
	"github.com/gpustack/gpustack-operator/test/framework/policycases"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// TestGatesFollowThePolicies runs the shared case table's Instance cases through the worker's own gates: they
// deny exactly what the gpustack-instance-privileged-gate and gpustack-instance-host-path-gate policies deny,
// with the same messages, so the gates hold whether or not the policies are installed.
func TestGatesFollowThePolicies(t *testing.T) {
	cases, err := policycases.Load(testenv.Path("policies", "testdata", "cases.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	gate := map[string]bool{
		`spec.privileged: Forbidden: privileged mode is not allowed: enable the "instance-privileged-allowed" setting to allow it`: true,
	}
	ran := 0
	for _, c := range cases {
		if c.Kind != "Instance" {
			continue
		}
		ran++
		t.Run(c.Name, func(t *testing.T) {
			values, err := settings.Parse(c.Settings)
			if err != nil {
				t.Fatal(err)
			}
			obj, old := c.Objects()
			inst := instanceOf(t, obj)
			inst.Namespace = c.NamespaceOrDefault()
			var oldInst *workerv1.Instance
			if old != nil {
				oldInst = instanceOf(t, old)
			}
			var got []string
			for _, e := range gateErrors(inst, oldInst, c.UserOrDefault(), values) {
				got = append(got, e.Error())
			}
			// The table's other Instance rules are the webhook's pool checks, not the gates.
			var want []string
			for _, w := range c.Want {
				if gate[w] || hostPathDenial(w) {
					want = append(want, w)
				}
			}
			sort.Strings(got)
			sort.Strings(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("gateErrors(...): -want, +got:\n%s", diff)
			}
		})
	}
	if ran < 10 {
		t.Errorf("the table has %d Instance cases; the gates' cases are missing", ran)
	}
}

func hostPathDenial(msg string) bool {
	const tail = `.hostPath: Forbidden: host path volumes are not allowed: enable the "instance-host-path-volume-allowed" setting to allow it`
	return len(msg) > len(tail) && msg[len(msg)-len(tail):] == tail
}

func instanceOf(t *testing.T, u *unstructured.Unstructured) *workerv1.Instance {
	t.Helper()
	inst := &workerv1.Instance{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, inst); err != nil {
		t.Fatalf("case object: %v", err)
	}
	return inst
}
