// Package ociimage builds the project's container images without a container engine: the binaries, and for a
// dynamically linked one the shared libraries it loads, are layered onto an empty base with
// go-containerregistry, and written as an image tarball (`docker save` format) that `crossplane xpkg build
// --embed-runtime-image-tarball`, `docker load` and `crane push` all read.
package ociimage

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// NonRoot is the user and group the images run as unless a Pod says otherwise: distroless's nonroot.
const NonRoot = "65532:65532"

// File is one file of an image.
type File struct {
	// Path is the absolute path in the image; one ending in a slash is an empty directory.
	Path string
	// Source is the file on this machine whose contents it takes.
	Source string
	// Content, when Source is empty, is its contents (a configuration file written by the build).
	Content string
	// Link, when set, makes the file a symbolic link to Link instead (Source is not read).
	Link string
	// Mode is its permission bits; a directory's (a Path ending in /) are 0755 when zero.
	Mode int64
}

// Spec describes an image.
type Spec struct {
	// Files are the image's files, in one layer.
	Files []File
	// Entrypoint is the command the image runs.
	Entrypoint []string
	// User is the user:group it runs as; NonRoot when empty.
	User string
	// Labels are the image config's labels (org.opencontainers.image.*).
	Labels map[string]string
	// Platform is the OS and architecture the binaries are built for.
	Platform v1.Platform
}

// epoch is the time written into layers and the config, so the same inputs give the same image digest.
var epoch = time.Unix(0, 0).UTC()

// Build returns the image: one layer holding the files and the directories above them, owned by root and
// readable by all, and a config with the entrypoint, the user and the labels.
func Build(s Spec) (v1.Image, error) {
	if len(s.Entrypoint) == 0 {
		return nil, errors.New("an image needs an entrypoint")
	}
	layer, err := fileLayer(s.Files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, errors.Wrap(err, "cannot add the layer")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the image config")
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = s.Entrypoint
	cf.Config.User = s.User
	if cf.Config.User == "" {
		cf.Config.User = NonRoot
	}
	cf.Config.Labels = s.Labels
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, errors.Wrap(err, "cannot set the image config")
	}
	return img, nil
}

// WriteTarball writes the image, tagged ref, as a tarball.
func WriteTarball(img v1.Image, ref, file string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return errors.Wrapf(err, "cannot parse image reference %q", ref)
	}
	if err := tarball.WriteToFile(file, tag, img); err != nil {
		return errors.Wrapf(err, "cannot write image %s to %s", ref, file)
	}
	return nil
}

// fileLayer returns one layer with the files and every directory above them, in path order.
func fileLayer(files []File) (v1.Layer, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, f := range sorted {
		if !path.IsAbs(f.Path) {
			return nil, errors.Errorf("image file %q: the path must be absolute", f.Path)
		}
		if dir, ok := strings.CutSuffix(f.Path, "/"); ok {
			if err := writeDir(tw, dirs, dir, f.Mode); err != nil {
				return nil, err
			}
			continue
		}
		if err := writeDirs(tw, dirs, path.Dir(f.Path)); err != nil {
			return nil, err
		}
		if f.Link != "" {
			hdr := &tar.Header{Name: f.Path[1:], Linkname: f.Link, Mode: 0o777, Typeflag: tar.TypeSymlink, ModTime: epoch, Format: tar.FormatPAX}
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
			continue
		}
		data := []byte(f.Content)
		if f.Source != "" {
			var err error
			if data, err = os.ReadFile(f.Source); err != nil {
				return nil, errors.Wrapf(err, "image file %s", f.Path)
			}
		}
		hdr := &tar.Header{Name: f.Path[1:], Mode: f.Mode, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: epoch, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// writeDirs writes the directory and its parents, each once, 0755.
func writeDirs(tw *tar.Writer, written map[string]bool, dir string) error {
	return writeDir(tw, written, dir, 0)
}

// writeDir writes the directory with its mode (0755 when zero) and its parents, each once.
func writeDir(tw *tar.Writer, written map[string]bool, dir string, mode int64) error {
	if dir == "" || dir == "/" || written[dir] {
		return nil
	}
	if err := writeDirs(tw, written, path.Dir(dir)); err != nil {
		return err
	}
	written[dir] = true
	if mode == 0 {
		mode = 0o755
	}
	return tw.WriteHeader(&tar.Header{Name: dir[1:] + "/", Mode: mode, Typeflag: tar.TypeDir, ModTime: epoch, Format: tar.FormatPAX})
}
