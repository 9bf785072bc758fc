package nvidia

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindLibrary(t *testing.T) {
	dir := t.TempDir()
	put := func(path string) string {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return full
	}
	operator := put("operator/usr/lib64/" + LibraryName)
	host := put("host/usr/lib/x86_64-linux-gnu/" + LibraryName)
	cases := map[string]struct {
		reason string
		roots  []string
		want   string
	}{
		"FirstRoot":  {"The containerized driver's library comes before the host's.", []string{filepath.Join(dir, "operator"), filepath.Join(dir, "host")}, operator},
		"DebianDirs": {"A Debian host keeps it under its multiarch directory.", []string{filepath.Join(dir, "none"), filepath.Join(dir, "host")}, host},
		"None":       {"Without a driver under any root the loader's own search is left.", []string{filepath.Join(dir, "none")}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, FindLibrary(tc.roots)); diff != "" {
				t.Errorf("%s\nFindLibrary(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
