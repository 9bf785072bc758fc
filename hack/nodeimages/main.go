// Command nodeimages builds, without a registry or a container engine, the images every real node of the
// local cluster holds before anything is pulled, as image archives its containerd imports:
//
//   - registry.k8s.io/pause:3.10.1, the Pods' sandbox: Kubernetes' own pause.c (from the pinned module),
//     compiled static by make;
//   - docker.io/library/busybox:1.35.0, a small user image: Debian's static busybox with a link per applet.
//
// `make node-images` runs it into bin/images.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpustack/gpustack-operator/hack/ociimage"
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
)

// BusyboxImage is the user image of the tests.
const BusyboxImage = "docker.io/library/busybox:1.35.0"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nodeimages:", err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("out", "bin/images", "directory to write the image archives to")
	pause := flag.String("pause", "bin/pause", "the static pause binary")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return errors.Wrap(err, "cannot create the output directory")
	}
	platform := v1.Platform{OS: "linux", Architecture: "amd64"}
	images := []struct {
		ref, file string
		spec      ociimage.Spec
	}{
		{realnode.PauseImage, "pause.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{"/pause"}, User: "65535:65535",
			Files: []ociimage.File{{Path: "/pause", Source: *pause, Mode: 0o755}}}},
	}
	files, err := busyboxFiles(*busybox)
	if err != nil {
		return err
	}
	images = append(images, struct {
		ref, file string
		spec      ociimage.Spec
	}{BusyboxImage, "busybox.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{"/bin/sh"}, User: "0:0", Files: files}})
	for _, img := range images {
		built, err := ociimage.Build(img.spec)
		if err != nil {
			return errors.Wrapf(err, "cannot build %s", img.ref)
		}
		if err := ociimage.WriteTarball(built, img.ref, filepath.Join(*out, img.file)); err != nil {
			return err
		}
	}
	return nil
}

// busyboxFiles is busybox at /bin/busybox and a link to it for each applet it lists, in /bin.
func busyboxFiles(busybox string) ([]ociimage.File, error) {
	list, err := exec.Command(busybox, "--list").Output() //nolint:gosec // the machine's busybox
	if err != nil {
		return nil, errors.Wrapf(err, "cannot list the applets of %s", busybox)
	}
	files := []ociimage.File{{Path: "/bin/busybox", Source: busybox, Mode: 0o755}}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			files = append(files, ociimage.File{Path: "/bin/" + applet, Link: "busybox"})
		}
	}
	return files, nil
}
