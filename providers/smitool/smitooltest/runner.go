// Package smitooltest answers the management-tool commands of the backends' tests from fixture files, the way
// the real tools would print them.
package smitooltest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/providers/smitool"
)

// Answer is what one command prints, or the error it fails with. Files are written into the command's
// working directory before it "returns", for tools that write their report to a file.
type Answer struct {
	Stdout string
	Err    error
	Files  map[string]string
}

// Runner answers commands by their command line ("rocm-smi --json ...").
type Runner map[string]Answer

// Run returns the answer for the command, or fails as a missing tool would.
func (r Runner) Run(_ context.Context, c smitool.Command) ([]byte, error) {
	a, ok := r[c.String()]
	if !ok {
		return nil, errors.Errorf("%s: the tool is not installed", c.Name)
	}
	for name, content := range a.Files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	return []byte(a.Stdout), a.Err
}

// Fixture reads a file under the test's testdata directory.
func Fixture(t interface {
	Helper()
	Fatal(...any)
}, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Devices runs a backend's Detect and returns what it found and its error text ("" for none).
func Devices(b *smitool.Backend) ([]providers.Device, string) {
	got, err := b.Detect(context.Background())
	if err != nil {
		return got, err.Error()
	}
	return got, ""
}

// Case is one Detect case of a vendor backend: the tools' answers, the cards wanted, and a fragment of the
// error wanted ("" for none).
type Case struct {
	Reason  string
	Answers Runner
	Want    []providers.Device
	Err     string
}

// RunDetect runs each case on the backend newBackend builds over a fake PCI bus of the given functions.
func RunDetect(t *testing.T, bus map[string]map[string]string, newBackend func(sysfsRoot string, run smitool.Runner) *smitool.Backend, cases map[string]Case) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Devices(newBackend(pcisysfstest.Tree(t, bus), tc.Answers))
			if diff := cmp.Diff(tc.Want, got); diff != "" {
				t.Errorf("%s\nDetect(...): -want, +got:\n%s", tc.Reason, diff)
			}
			if tc.Err == "" && err != "" || !strings.Contains(err, tc.Err) {
				t.Errorf("%s\nDetect(...): error %q, want one containing %q", tc.Reason, err, tc.Err)
			}
		})
	}
}
