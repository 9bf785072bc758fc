package smitool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHostTool(t *testing.T) {
	dirs := []string{"/usr/local/sbin", "/usr/bin", "/opt/rocm/bin"}
	cases := map[string]struct {
		reason string
		files  map[string]os.FileMode
		name   string
		want   string
	}{
		"InStandardDir": {
			reason: "A tool in one of the root's command directories is found there.",
			files:  map[string]os.FileMode{"usr/bin/hy-smi": 0o755},
			name:   "hy-smi",
			want:   "/usr/bin/hy-smi",
		},
		"FirstDirWins": {
			reason: "Directories are searched in order, as PATH is.",
			files:  map[string]os.FileMode{"usr/bin/rocm-smi": 0o755, "usr/local/sbin/rocm-smi": 0o755, "opt/rocm/bin/rocm-smi": 0o755},
			name:   "rocm-smi",
			want:   "/usr/local/sbin/rocm-smi",
		},
		"VendorDir": {
			reason: "A tool only the vendor's own directory holds is found there.",
			files:  map[string]os.FileMode{"opt/rocm/bin/rocm-smi": 0o755},
			name:   "rocm-smi",
			want:   "/opt/rocm/bin/rocm-smi",
		},
		"NotExecutable": {
			reason: "A file that is not executable is not a tool.",
			files:  map[string]os.FileMode{"usr/bin/cnmon": 0o644},
			name:   "cnmon",
			want:   "",
		},
		"Directory": {
			reason: "A directory of the tool's name is not a tool.",
			files:  map[string]os.FileMode{"usr/bin/npu-smi/": 0o755},
			name:   "npu-smi",
			want:   "",
		},
		"PathNotName": {
			reason: "Only a bare name is looked up: a path could leave the directories.",
			files:  map[string]os.FileMode{"usr/bin/ixsmi": 0o755},
			name:   "../bin/ixsmi",
			want:   "",
		},
		"Missing": {
			reason: "A node without the tool has none.",
			name:   "mx-smi",
			want:   "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for path, mode := range tc.files {
				full := filepath.Join(root, path)
				if path[len(path)-1] == '/' {
					if err := os.MkdirAll(full, mode); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte("#!/bin/sh\n"), mode); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.want, hostTool(root, tc.name, dirs)); diff != "" {
				t.Errorf("%s\nhostTool(%q): -want, +got:\n%s", tc.reason, tc.name, diff)
			}
		})
	}
}

// A tool run in the node's root writes its report in a scratch directory there; the caller reads it from the
// directory it named.
func TestScratchMovesReports(t *testing.T) {
	root, caller := t.TempDir(), t.TempDir()
	inside, outside, err := scratchDir(root, "/var/lib/gpustack/tools")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(filepath.Join(root, inside), outside); diff != "" {
		t.Errorf("scratchDir: the agent's path is the root's path under the root: -want, +got:\n%s", diff)
	}
	if err := os.WriteFile(filepath.Join(outside, "cnmon_info.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(outside, "cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := moveFiles(outside, caller); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(caller)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff([]string{"cnmon_info.json"}, got); diff != "" {
		t.Errorf("moveFiles: the tool's regular files reach the caller: -want, +got:\n%s", diff)
	}
}
