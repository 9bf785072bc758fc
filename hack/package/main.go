// Command package builds the project's container images and Crossplane packages offline, for `make package`:
//
//   - one runtime image per composition function (the static gpustack-function binary on an empty base) and
//     its Function package, built with `crossplane xpkg build --embed-runtime-image-tarball`;
//   - the Configuration package: package/crossplane.yaml with the XRDs and Compositions of compositions/;
//   - the operator's image (worker, device-manager), with the C library its NVML binding loads through.
//
// Everything lands in --out: images/*.tar (image tarballs in `docker save` format, ready for `docker load` or `crane push`) and *.xpkg.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpustack/gpustack-operator/functions/server"
	"github.com/gpustack/gpustack-operator/hack/ociimage"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("out", "_output/package", "directory to write the images and packages to")
	crank := flag.String("crank", "bin/crank", "the Crossplane CLI")
	version := flag.String("version", "v0.2.0", "the version the images and packages are tagged with")
	registry := flag.String("registry", "docker.io/gpustack", "the registry and organisation of the images")
	functionBin := flag.String("function-binary", "", "the static gpustack-function binary")
	operatorBin := flag.String("operator-binary", "", "the gpustack-operator binary")
	operatorOnly := flag.Bool("operator-image-only", false, "build the operator's image alone (what the demo's real nodes run), no function and no Crossplane package")
	flag.Parse()
	if *operatorBin == "" {
		return errors.New("--operator-binary is required")
	}
	if *functionBin == "" && !*operatorOnly {
		return errors.New("--function-binary is required, unless --operator-image-only")
	}
	if err := os.MkdirAll(filepath.Join(*out, "images"), 0o755); err != nil {
		return err
	}
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	labels := func(title string) map[string]string {
		return map[string]string{"org.opencontainers.image.title": title, "org.opencontainers.image.version": *version,
			"org.opencontainers.image.source": "https://github.com/gpustack/gpustack-operator", "org.opencontainers.image.licenses": "Apache-2.0"}
	}
	if !*operatorOnly {
		if err := buildPackages(*out, *crank, *version, *registry, *functionBin, platform, labels); err != nil {
			return err
		}
	}
	return buildOperatorImage(*out, *version, *registry, *operatorBin, platform, labels)
}

// buildPackages builds each function's runtime image and Crossplane package, and the Configuration package.
func buildPackages(out, crank, version, registry, functionBin string, platform v1.Platform, labels func(string) map[string]string) error {
	for _, fn := range sortedFunctions() {
		name := "gpustack-function-" + fn
		img, err := ociimage.Build(ociimage.Spec{Platform: platform, Labels: labels(name),
			Files:      []ociimage.File{{Path: "/usr/local/bin/gpustack-function", Source: functionBin, Mode: 0o755}},
			Entrypoint: []string{"/usr/local/bin/gpustack-function", fn}})
		if err != nil {
			return errors.Wrapf(err, "cannot build the runtime image of %s", name)
		}
		tar := filepath.Join(out, "images", name+".tar")
		if err := ociimage.WriteTarball(img, registry+"/"+name+":"+version, tar); err != nil {
			return err
		}
		stage, err := stageDir(out, name, filepath.Join("package", "functions", fn, "crossplane.yaml"))
		if err != nil {
			return err
		}
		if err := xpkgBuild(crank, stage, filepath.Join(out, name+"-"+version+".xpkg"), "--embed-runtime-image-tarball", tar); err != nil {
			return err
		}
	}

	compositions, err := filepath.Glob(filepath.Join("compositions", "*-*.yaml"))
	if err != nil {
		return err
	}
	stage, err := stageDir(out, "gpustack-operator-configuration", append([]string{filepath.Join("package", "crossplane.yaml")}, compositions...)...)
	if err != nil {
		return err
	}
	return xpkgBuild(crank, stage, filepath.Join(out, "gpustack-operator-configuration-"+version+".xpkg"))
}

// buildOperatorImage builds the operator's image: its binary and the C libraries it loads.
func buildOperatorImage(out, version, registry, operatorBin string, platform v1.Platform, labels func(string) map[string]string) error {
	libs, err := ociimage.SharedLibraries(operatorBin, ociimage.DefaultLibraryDirs)
	if err != nil {
		return errors.Wrap(err, "cannot collect the operator's libraries")
	}
	// A /tmp as every base image has: the device manager runs vendor tools in temporary directories (cnmon).
	files := []ociimage.File{{Path: "/usr/local/bin/gpustack-operator", Source: operatorBin, Mode: 0o755}, {Path: "/tmp/", Mode: 0o1777}}
	img, err := ociimage.Build(ociimage.Spec{Platform: platform, Labels: labels("gpustack-operator"),
		Files:      append(files, libs...),
		Entrypoint: []string{"/usr/local/bin/gpustack-operator"}})
	if err != nil {
		return errors.Wrap(err, "cannot build the operator image")
	}
	return ociimage.WriteTarball(img, registry+"/gpustack-operator:"+version, filepath.Join(out, "images", "gpustack-operator.tar"))
}

// sortedFunctions returns the composition functions' names in order, so builds are reproducible.
func sortedFunctions() []string {
	names := make([]string, 0, len(server.Functions))
	for n := range server.Functions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// stageDir copies a package's files into a fresh directory of their own: xpkg build reads every YAML file
// under its root, and the repository keeps the metadata, the CRDs and the compositions in different places.
func stageDir(out, name string, files ...string) (string, error) {
	dir := filepath.Join(out, "stage", name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// xpkgBuild runs `crossplane xpkg build` on a staged package. The examples root points into the stage, which
// has none, so the repository's examples/ is not swept into the package.
func xpkgBuild(crank, root, file string, extra ...string) error {
	args := append([]string{"xpkg", "build", "--package-root", root, "--examples-root", filepath.Join(root, "examples"), "-o", file}, extra...)
	cmd := exec.Command(crank, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return errors.Wrapf(err, "crossplane %v", args)
	}
	fmt.Println("built", file)
	return nil
}
