// Command nodeimages builds, without a registry or a container engine, the images every real node of the
// local cluster holds before anything is pulled, as image archives its containerd imports:
//
//   - registry.k8s.io/pause:3.10.1, the Pods' sandbox: Kubernetes' own pause.c (from the pinned module),
//     compiled static by make;
//   - docker.io/library/busybox:1.35.0, a small user image: Debian's static busybox with a link per applet;
//   - registry.k8s.io/kueue/kueue, registry.k8s.io/nfd/node-feature-discovery and
//     docker.io/rancher/local-path-provisioner at the pinned versions, the images Kueue's, NFD's and the
//     local-path provisioner's charts run, from the binaries make tools builds (laid out as their own
//     Dockerfiles lay them out: /manager; nfd-* and local-path-provisioner in /usr/bin), with the C libraries
//     they load.
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

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nodeimages:", err)
		os.Exit(1)
	}
}

// image is one image to build: its reference, its archive's file name and what it holds.
type image struct {
	ref, file string
	spec      ociimage.Spec
}

func run() error {
	out := flag.String("out", "bin/images", "directory to write the image archives to")
	bin := flag.String("bin", "bin", "directory of the binaries make tools builds (pause, kueue, nfd-*)")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox")
	kueueVersion := flag.String("kueue-version", "v0.17.0", "the version of the Kueue binary in --bin")
	nfdVersion := flag.String("nfd-version", "v0.19.0", "the version of the NFD binaries in --bin")
	localPathVersion := flag.String("local-path-version", "v0.0.30", "the version of the local-path-provisioner binary in --bin")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return errors.Wrap(err, "cannot create the output directory")
	}
	platform := v1.Platform{OS: "linux", Architecture: "amd64"}
	busyboxFiles, err := busyboxFiles(*busybox)
	if err != nil {
		return err
	}
	kueue, err := withLibraries(ociimage.File{Path: "/manager", Source: filepath.Join(*bin, "kueue"), Mode: 0o755})
	if err != nil {
		return err
	}
	var nfd []ociimage.File
	for _, b := range []string{"nfd-master", "nfd-worker", "nfd-gc"} {
		files, err := withLibraries(ociimage.File{Path: "/usr/bin/" + b, Source: filepath.Join(*bin, b), Mode: 0o755})
		if err != nil {
			return err
		}
		nfd = append(nfd, files...)
	}
	localPath, err := withLibraries(ociimage.File{Path: "/usr/bin/local-path-provisioner", Source: filepath.Join(*bin, "local-path-provisioner"), Mode: 0o755})
	if err != nil {
		return err
	}
	images := []image{
		{realnode.PauseImage, "pause.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{"/pause"}, User: "65535:65535",
			Files: []ociimage.File{{Path: "/pause", Source: filepath.Join(*bin, "pause"), Mode: 0o755}}}},
		{realnode.BusyboxImage, "busybox.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{"/bin/sh"}, User: "0:0", Files: busyboxFiles}},
		{"registry.k8s.io/kueue/kueue:" + *kueueVersion, "kueue.tar",
			ociimage.Spec{Platform: platform, Entrypoint: []string{"/manager"}, Files: kueue}},
		{"registry.k8s.io/nfd/node-feature-discovery:" + *nfdVersion, "nfd.tar",
			ociimage.Spec{Platform: platform, Entrypoint: []string{"/usr/bin/nfd-worker"}, User: "65534:65534", Files: dedupe(nfd)}},
		// Its chart runs the command by name: the image's PATH finds it in /usr/bin, as in its Alpine image.
		{"docker.io/rancher/local-path-provisioner:" + *localPathVersion, "local-path-provisioner.tar",
			ociimage.Spec{Platform: platform, Entrypoint: []string{"/usr/bin/local-path-provisioner"}, User: "0:0", Files: localPath}},
	}
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

// withLibraries is a binary and the C libraries it loads.
func withLibraries(f ociimage.File) ([]ociimage.File, error) {
	libs, err := ociimage.SharedLibraries(f.Source, ociimage.DefaultLibraryDirs)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot find the libraries of %s", f.Source)
	}
	return append([]ociimage.File{f}, libs...), nil
}

// dedupe drops the second of two files with one path (a library two binaries load).
func dedupe(files []ociimage.File) []ociimage.File {
	seen := map[string]bool{}
	var out []ociimage.File
	for _, f := range files {
		if !seen[f.Path] {
			seen[f.Path] = true
			out = append(out, f)
		}
	}
	return out
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
