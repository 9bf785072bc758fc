// Package testenv locates what tests that need a real control plane use: the binaries `make tools` builds and
// the repository's own files.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// BinDirEnv names the variable `make test` sets to the directory of the built binaries.
const BinDirEnv = "GPUSTACK_BIN"

// BinDir returns the directory of the binaries `make tools` builds. When the variable is unset the caller
// should skip: a plain `go test ./...` runs the unit tests only. When it is set but a binary is missing, that
// is an error, so `make test` never passes by skipping.
func BinDir(binaries ...string) (dir string, skip string, err error) {
	dir = os.Getenv(BinDirEnv)
	if dir == "" {
		return "", fmt.Sprintf("%s is not set: run `make test` to run the tests that need a control plane", BinDirEnv), nil
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", "", errors.Errorf("%s is missing from %s=%s: run `make tools`", b, BinDirEnv, dir)
		}
	}
	return dir, "", nil
}

// OperatorImageEnv names the operator's image archive (make operator-image or make package writes it), which
// real nodes import: they pull nothing.
const OperatorImageEnv = "GPUSTACK_OPERATOR_IMAGE"

// OperatorImage returns the operator's image archive: OperatorImageEnv, or _output/package/images/
// gpustack-operator.tar when unset. It fails, saying how to build it, when the archive is missing.
func OperatorImage() (string, error) {
	image := os.Getenv(OperatorImageEnv)
	if image == "" {
		image = Path("_output", "package", "images", "gpustack-operator.tar")
	}
	if _, err := os.Stat(image); err != nil {
		return "", errors.Wrap(err, "cannot find the operator's image archive (make operator-image writes it)")
	}
	return image, nil
}

// RepoRoot returns the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Path returns a path relative to the repository's root.
func Path(parts ...string) string {
	return filepath.Join(append([]string{RepoRoot()}, parts...)...)
}

// StartEnvtest starts controller-runtime's envtest (etcd and kube-apiserver from bin) with the CRDs of the
// given files and directories. The returned stop is safe to call when start failed half-way, so no process
// outlives the suite.
func StartEnvtest(bin string, crdPaths ...string) (*rest.Config, func(), error) {
	env := &envtest.Environment{CRDDirectoryPaths: crdPaths, ErrorIfCRDPathMissing: true, BinaryAssetsDirectory: bin}
	stop := func() { _ = env.Stop() }
	cfg, err := env.Start()
	if err != nil {
		return nil, stop, errors.Wrap(err, "cannot start envtest")
	}
	return cfg, stop, nil
}
