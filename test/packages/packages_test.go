// Package packages checks what `make package` built: it opens each Crossplane package and image tarball as a
// client would, reads the package metadata and objects out of the layer the xpkg config marks as its base, and
// runs the binaries the images would run.
package packages

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gpustack/gpustack-operator/hack/ociimage"
)

const version = "v0.2.0"

// dir returns where make package wrote its output (PACKAGE_DIR; not a GPUSTACK_ variable, which the worker
// would copy onto the device managers), or skips the test.
func dir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("PACKAGE_DIR")
	if d == "" {
		t.Skip("PACKAGE_DIR is not set: run `make test`, which runs `make package` first")
	}
	return d
}

// xpkg opens a package and returns its image and the objects of its package.yaml, metadata first.
func xpkg(t *testing.T, file string) (v1.Image, []*unstructured.Unstructured) {
	t.Helper()
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		t.Fatalf("cannot open %s: %v", file, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		d, _ := l.Digest()
		if cf.Config.Labels["io.crossplane.xpkg:"+d.String()] != "base" {
			continue
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				t.Fatalf("%s: no package.yaml in the base layer: %v", file, err)
			}
			if h.Name == "package.yaml" {
				return img, decode(t, tr)
			}
		}
	}
	t.Fatalf("%s: no layer is labelled as the package's base", file)
	return nil, nil
}

func decode(t *testing.T, r io.Reader) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// extract unpacks an image's filesystem into a fresh directory and returns it with the image's files and
// their permission bits.
func extract(t *testing.T, img v1.Image) (string, map[string]int64) {
	t.Helper()
	root := t.TempDir()
	files, err := ociimage.Extract(img, root)
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

type config struct {
	Entrypoint []string
	User       string
	Title      string
}

func configOf(t *testing.T, img v1.Image) config {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return config{cf.Config.Entrypoint, cf.Config.User, cf.Config.Labels["org.opencontainers.image.title"]}
}

// TestFunctionPackages opens each Function package: its metadata names the function, its embedded runtime
// runs the static gpustack-function binary as a non-root user, and that binary, taken out of the package and
// started as the package's Deployment would (without TLS here), answers a RunFunction call over gRPC.
func TestFunctionPackages(t *testing.T) {
	d := dir(t)
	for _, fn := range []string{"flavors", "instancetype"} {
		t.Run(fn, func(t *testing.T) {
			name := "gpustack-function-" + fn
			img, objs := xpkg(t, filepath.Join(d, name+"-"+version+".xpkg"))
			if len(objs) != 1 {
				t.Fatalf("a Function package holds its metadata only, got %d objects", len(objs))
			}
			meta := objs[0]
			if got := meta.GetAPIVersion() + " " + meta.GetKind() + " " + meta.GetName(); got != "meta.pkg.crossplane.io/v1beta1 Function "+name {
				t.Errorf("package metadata: got %s", got)
			}
			want := config{Entrypoint: []string{"/usr/local/bin/gpustack-function", fn}, User: "65532:65532", Title: name}
			if diff := cmp.Diff(want, configOf(t, img)); diff != "" {
				t.Errorf("the embedded runtime's config: -want, +got:\n%s", diff)
			}
			root, files := extract(t, img)
			if mode, ok := files["/usr/local/bin/gpustack-function"]; !ok || mode != 0o755 {
				t.Fatalf("the image holds /usr/local/bin/gpustack-function with mode 755; its files: %v", files)
			}
			path := filepath.Join(root, "usr", "local", "bin", "gpustack-function")
			if f, err := elf.Open(path); err != nil {
				t.Fatal(err)
			} else {
				for _, p := range f.Progs {
					if p.Type == elf.PT_INTERP {
						t.Error("the function binary is dynamically linked; the image has no C library")
					}
				}
				f.Close()
			}
			callFunction(t, path, fn)
		})
	}
}

// callFunction starts the function binary on a free port and sends it a request with no composite resource:
// a function that runs answers with a fatal result naming what is missing.
func callFunction(t *testing.T, path, fn string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(path, fn, "--insecure", "--address", addr)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var rsp *fnv1.RunFunctionResponse
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rsp, err = fnv1.NewFunctionRunnerServiceClient(conn).RunFunction(ctx, &fnv1.RunFunctionRequest{Meta: &fnv1.RequestMeta{Tag: "probe"}})
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the packaged function does not answer: %v\n%s", err, logs.String())
	}
	if len(rsp.GetResults()) == 0 || rsp.GetResults()[0].GetSeverity() != fnv1.Severity_SEVERITY_FATAL {
		t.Errorf("a request without a composite resource gets a fatal result, got %v", rsp.GetResults())
	}
}

// TestConfigurationPackage opens the Configuration: it depends on both Function packages and holds the two
// XRDs and the two Compositions, each Composition calling a function it depends on.
func TestConfigurationPackage(t *testing.T) {
	_, objs := xpkg(t, filepath.Join(dir(t), "gpustack-operator-configuration-"+version+".xpkg"))
	meta := objs[0]
	if got := meta.GetKind() + " " + meta.GetName(); got != "Configuration gpustack-operator" {
		t.Errorf("package metadata: got %s", got)
	}
	deps, _, _ := unstructured.NestedSlice(meta.Object, "spec", "dependsOn")
	depends := map[string]bool{}
	for _, dep := range deps {
		pkg, _, _ := unstructured.NestedString(dep.(map[string]any), "package")
		depends[pkg[strings.LastIndex(pkg, "/")+1:]] = true
	}
	var got []string
	for _, o := range objs[1:] {
		got = append(got, o.GetKind()+" "+o.GetName())
		if o.GetKind() != "Composition" {
			continue
		}
		steps, _, _ := unstructured.NestedSlice(o.Object, "spec", "pipeline")
		for _, s := range steps {
			ref, _, _ := unstructured.NestedString(s.(map[string]any), "functionRef", "name")
			if !depends[ref] {
				t.Errorf("composition %s calls %s, which the Configuration does not depend on (%v)", o.GetName(), ref, depends)
			}
		}
	}
	want := []string{"Composition gpustack-instance-type-pool", "Composition gpustack-node-inventory",
		"CompositeResourceDefinition xinstancetypepools.pools.gpustack.ai", "CompositeResourceDefinition xnodeinventories.pools.gpustack.ai"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Configuration's objects: -want, +got:\n%s", diff)
	}
}

// TestOperatorImage opens the operator's image: it runs gpustack-operator as a non-root user, carries the C
// library the binary links against, and, where the test may chroot (as root), the binary starts inside the
// unpacked image and prints its usage.
func TestOperatorImage(t *testing.T) {
	img, err := tarball.ImageFromPath(filepath.Join(dir(t), "images", "gpustack-operator.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config{Entrypoint: []string{"/usr/local/bin/gpustack-operator"}, User: "65532:65532", Title: "gpustack-operator"}
	if diff := cmp.Diff(want, configOf(t, img)); diff != "" {
		t.Errorf("the image's config: -want, +got:\n%s", diff)
	}
	root, files := extract(t, img)
	if _, ok := files["/usr/local/bin/gpustack-operator"]; !ok {
		t.Fatalf("the image does not hold its entrypoint; its files: %v", files)
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the image's binary is not run in the unpacked image")
	}
	cmd := exec.Command("/usr/local/bin/gpustack-operator")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	cmd.Env = []string{}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "usage: gpustack-operator <") || !strings.Contains(string(out), "|worker") {
		t.Errorf("the operator does not start in its image:\n%s", out)
	}
}
