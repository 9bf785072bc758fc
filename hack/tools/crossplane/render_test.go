package tools

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	renderv1alpha1 "github.com/crossplane/crossplane/v2/proto/render/v1alpha1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"
)

// TestRenderMatchesEmbedded renders the walkthrough's composites with Crossplane's own render engine
// (`crossplane internal render`, the engine behind `crossplane composition render`), calling the functions
// over gRPC as Crossplane's Development runtime does, and checks that the result equals what the embedded
// composer produces for the same inventory (`gpustack-operator plan`).
func TestRenderMatchesEmbedded(t *testing.T) {
	bin := os.Getenv("GPUSTACK_BIN")
	if bin == "" {
		t.Skip("GPUSTACK_BIN is not set: run `make test`")
	}
	for _, b := range []string{"crossplane", "gpustack-operator"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s is missing from %s: run `make tools build`", b, bin)
		}
	}
	root, _ := filepath.Abs("../../..")
	inventory := filepath.Join(root, "examples", "clusters", "walkthrough.yaml")
	var composites struct{ Items []map[string]any }
	decode(t, run(t, nil, filepath.Join(bin, "gpustack-operator"), "plan", "--inventory", inventory, "-o", "composites"), &composites)
	var embedded struct{ Items []map[string]any }
	decode(t, run(t, nil, filepath.Join(bin, "gpustack-operator"), "plan", "--inventory", inventory, "-o", "yaml"), &embedded)

	functions := map[string]string{}
	for _, fn := range []string{"flavors", "instancetype"} {
		functions["gpustack-function-"+fn] = serve(t, filepath.Join(bin, "gpustack-operator"), fn)
	}
	compositions := map[string]map[string]any{}
	for _, f := range []string{"composition-nodeinventory.yaml", "composition-instancetypepool.yaml"} {
		c := map[string]any{}
		data, err := os.ReadFile(filepath.Join(root, "compositions", f))
		if err != nil {
			t.Fatal(err)
		}
		decode(t, data, &c)
		kind := c["spec"].(map[string]any)["compositeTypeRef"].(map[string]any)["kind"].(string)
		compositions[kind] = c
	}

	want := index(embedded.Items)
	got := map[string]map[string]any{}
	for _, xr := range composites.Items {
		out := render(t, filepath.Join(bin, "crossplane"), xr, compositions[xr["kind"].(string)], functions)
		for _, c := range out.GetComposedResources() {
			o := c.AsMap()
			got[key(o)] = comparable(o)
		}
		if xr["kind"] == "XInstanceTypePool" {
			// The pool's status is the InstanceType's status.
			name := xr["spec"].(map[string]any)["name"].(string)
			status := out.GetCompositeResource().AsMap()["status"].(map[string]any)
			delete(status, "conditions")
			got["InstanceTypeStatus/"+name] = map[string]any{"status": status}
		}
	}
	// The flavors function composes a derived InstanceType's spec, its pool's function its status.
	for k, w := range want {
		if name, ok := strings.CutPrefix(k, "InstanceType/"); ok {
			want["InstanceTypeStatus/"+name] = map[string]any{"status": w["status"]}
			delete(w, "status")
		}
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("the embedded composer makes %s; Crossplane's render does not", k)
			continue
		}
		if !reflect.DeepEqual(normalize(t, w), normalize(t, g)) {
			t.Errorf("%s differs:\nembedded: %v\nrendered: %v", k, w, g)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("Crossplane's render makes %s; the embedded composer does not", k)
		}
	}
	if len(want) < 20 {
		t.Errorf("only %d objects compared; the walkthrough composes flavors, catalog, types and queues", len(want))
	}
}

// render runs one composite through `crossplane internal render`.
func render(t *testing.T, crossplane string, xr, composition map[string]any, functions map[string]string) *renderv1alpha1.CompositeOutput {
	t.Helper()
	in := &renderv1alpha1.CompositeInput{CompositeResource: mustStruct(t, xr), Composition: mustStruct(t, composition)}
	for name, addr := range functions {
		in.Functions = append(in.Functions, &renderv1alpha1.FunctionInput{Name: name, Address: addr})
	}
	sort.Slice(in.Functions, func(i, j int) bool { return in.Functions[i].Name < in.Functions[j].Name })
	req, err := proto.Marshal(&renderv1alpha1.RenderRequest{Meta: &renderv1alpha1.RequestMeta{},
		Input: &renderv1alpha1.RenderRequest_Composite{Composite: in}})
	if err != nil {
		t.Fatal(err)
	}
	rsp := &renderv1alpha1.RenderResponse{}
	if err := proto.Unmarshal(run(t, req, crossplane, "internal", "render"), rsp); err != nil {
		t.Fatalf("cannot decode the render response: %v", err)
	}
	return rsp.GetComposite()
}

// serve starts one function's gRPC server on a free loopback port and returns its address.
func serve(t *testing.T, operator, fn string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(operator, "function", fn, "--insecure", "--address", addr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return addr
		}
		if ctx.Err() != nil {
			t.Fatalf("function %s does not listen on %s", fn, addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func run(t *testing.T, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func decode(t *testing.T, data []byte, into any) {
	t.Helper()
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	data, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var plain map[string]any
	if err := yaml.Unmarshal(data, &plain); err != nil {
		t.Fatal(err)
	}
	s, err := structpb.NewStruct(plain)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// index keys the embedded composer's objects by kind, namespace and name, keeping the compared fields.
func index(items []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range items {
		out[key(o)] = comparable(o)
	}
	return out
}

func key(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	if ns != "" {
		return fmt.Sprintf("%s/%s/%s", o["kind"], ns, name)
	}
	return fmt.Sprintf("%s/%s", o["kind"], name)
}

// comparable keeps what both paths must agree on: the labels this project sets, spec and status. Crossplane
// adds its own labels, annotations and owner references to what it composes.
func comparable(o map[string]any) map[string]any {
	out := map[string]any{}
	md, _ := o["metadata"].(map[string]any)
	labels := map[string]any{}
	if l, ok := md["labels"].(map[string]any); ok {
		for k, v := range l {
			if !strings.HasPrefix(k, "crossplane.io/") {
				labels[k] = v
			}
		}
	}
	out["labels"] = labels
	for _, f := range []string{"spec", "status"} {
		if v, ok := o[f]; ok {
			out[f] = v
		}
	}
	return out
}

// normalize round-trips through YAML so numbers compare alike, and drops zero values: Crossplane writes
// explicit zeros (inactive: false, status.observedGeneration: 0) where the embedded path leaves fields out.
func normalize(t *testing.T, v any) any {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return dropZero(out)
}

func dropZero(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			e = dropZero(e)
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = e
		}
		if len(x) == 0 {
			return nil
		}
		return x
	case []any:
		for i := range x {
			x[i] = dropZero(x[i])
		}
		return x
	case bool:
		if !x {
			return nil
		}
	case float64:
		if x == 0 {
			return nil
		}
	case string:
		if x == "" {
			return nil
		}
	}
	return v
}
