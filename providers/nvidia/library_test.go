package nvidia

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
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

func TestArchitecture(t *testing.T) {
	cases := map[string]struct {
		reason string
		family string
		want   nvml.DeviceArchitecture
	}{
		"Turing":  {"A family name reads back as the architecture NVML reports for it.", "Turing", nvml.DEVICE_ARCH_TURING},
		"Ada":     {"The labels' own spelling, Ada-Lovelace, not NVML's constant's name.", "Ada-Lovelace", nvml.DEVICE_ARCH_ADA},
		"Unknown": {"A name no architecture has is NVML's unknown one.", "Ada", nvml.DEVICE_ARCH_UNKNOWN},
		"Empty":   {"No family is the unknown architecture, not the first one family names nothing for.", "", nvml.DEVICE_ARCH_UNKNOWN},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Architecture(tc.family)); diff != "" {
				t.Errorf("%s\nArchitecture(%q): -want, +got:\n%s", tc.reason, tc.family, diff)
			}
		})
	}
}
