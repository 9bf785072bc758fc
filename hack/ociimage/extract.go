package ociimage

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Extract writes an image's filesystem (its layers flattened) into dir and returns the absolute path of each
// regular file in the image with its permission bits, for a test to check and to run what an image holds.
func Extract(img v1.Image, dir string) (map[string]int64, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, errors.Wrap(err, "cannot read the image's filesystem")
		}
		p := filepath.Join(dir, h.Name)
		if !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
			return nil, errors.Errorf("image path %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode))
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
			files["/"+h.Name] = h.Mode
		}
	}
}
