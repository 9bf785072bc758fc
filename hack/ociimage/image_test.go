package ociimage

import (
	"archive/tar"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// hello builds a tiny Go program, linked statically or against the C library.
func hello(t *testing.T, cgo bool) string {
	t.Helper()
	dir := t.TempDir()
	src := `package main

import "fmt"

func main() { fmt.Println("hello from the image") }
`
	if cgo {
		src = `package main

// #include <stdio.h>
// static void hello() { printf("hello from the image\n"); fflush(stdout); }
import "C"

func main() { C.hello() }
`
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", out, "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "CGO_ENABLED="+map[bool]string{true: "1", false: "0"}[cgo])
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cannot build the test program: %v\n%s", err, b)
	}
	return out
}

// TestBuild builds an image of a static and of a dynamically linked program, writes and reads it back as a
// tarball, and checks its config and files. Where the test may chroot (as root), it runs the entrypoint in
// the unpacked image: the program must start with nothing but what the image holds.
func TestBuild(t *testing.T) {
	cases := map[string]struct {
		reason   string
		cgo      bool
		wantLibs bool
	}{
		"Static":  {reason: "a static binary is the image's only file", cgo: false},
		"Dynamic": {reason: "a binary linked against the C library brings the interpreter and the library", cgo: true, wantLibs: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			bin := hello(t, tc.cgo)
			libs, err := SharedLibraries(bin, DefaultLibraryDirs)
			if err != nil {
				t.Fatal(err)
			}
			if (len(libs) > 0) != tc.wantLibs {
				t.Fatalf("%s\nSharedLibraries(...): got %v", tc.reason, libs)
			}
			files := append([]File{{Path: "/usr/local/bin/hello", Source: bin, Mode: 0o755}}, libs...)
			img, err := Build(Spec{Files: files, Entrypoint: []string{"/usr/local/bin/hello"},
				Labels: map[string]string{"org.opencontainers.image.title": "hello"}, Platform: v1.Platform{OS: "linux", Architecture: "amd64"}})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "hello.tar")
			if err := WriteTarball(img, "example.org/hello:v1", file); err != nil {
				t.Fatal(err)
			}
			read, err := tarball.ImageFromPath(file, nil)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := read.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			type config struct {
				Entrypoint []string
				User, OS   string
				Labels     map[string]string
			}
			want := config{Entrypoint: []string{"/usr/local/bin/hello"}, User: NonRoot, OS: "linux", Labels: map[string]string{"org.opencontainers.image.title": "hello"}}
			if diff := cmp.Diff(want, config{cf.Config.Entrypoint, cf.Config.User, cf.OS, cf.Config.Labels}); diff != "" {
				t.Errorf("%s\nconfig: -want, +got:\n%s", tc.reason, diff)
			}
			root := t.TempDir()
			got, err := Extract(read, root)
			if err != nil {
				t.Fatal(err)
			}
			var wantPaths, gotPaths []string
			for _, f := range files {
				wantPaths = append(wantPaths, f.Path)
			}
			for p, mode := range got {
				gotPaths = append(gotPaths, p)
				if mode != 0o755 {
					t.Errorf("%s has mode %o, want 755", p, mode)
				}
			}
			sort.Strings(wantPaths)
			sort.Strings(gotPaths)
			if diff := cmp.Diff(wantPaths, gotPaths); diff != "" {
				t.Errorf("%s\nfiles: -want, +got:\n%s", tc.reason, diff)
			}
			if os.Geteuid() != 0 {
				t.Log("not root: the entrypoint is not run in the unpacked image")
				return
			}
			cmd := exec.Command("/usr/local/bin/hello")
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
			cmd.Env = []string{}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "hello from the image") {
				t.Errorf("%s\nthe entrypoint does not run in the image: %v\n%s", tc.reason, err, out)
			}
		})
	}
}

// TestBuildRefusesRelativePaths checks that a file without an absolute path is an error naming it.
func TestBuildRefusesRelativePaths(t *testing.T) {
	_, err := Build(Spec{Files: []File{{Path: "usr/bin/x", Source: "/dev/null"}}, Entrypoint: []string{"x"}})
	if err == nil || !strings.Contains(err.Error(), `"usr/bin/x"`) {
		t.Errorf("want an error naming the relative path, got %v", err)
	}
}

// TestBuildDirectoryModes checks that a directory entry keeps the mode asked for (/tmp's sticky 1777), that
// one without a mode and the parents of files are 0755, and that each directory is written once.
func TestBuildDirectoryModes(t *testing.T) {
	img, err := Build(Spec{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Entrypoint: []string{"/bin/true"}, Files: []File{
		{Path: "/tmp/", Mode: 0o1777}, {Path: "/run/sshd/"}, {Path: "/run/sshd/pid", Content: "1", Mode: 0o644}}})
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("Layers(): %d layers, %v", len(layers), err)
	}
	r, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	got := map[string]int64{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, seen := got[hdr.Name]; seen {
			t.Errorf("%s is written twice", hdr.Name)
		}
		got[hdr.Name] = hdr.Mode
	}
	want := map[string]int64{"tmp/": 0o1777, "run/": 0o755, "run/sshd/": 0o755, "run/sshd/pid": 0o644}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build(...): modes of the layer's entries: -want, +got:\n%s", diff)
	}
}
