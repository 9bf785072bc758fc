// Command nodeimages builds, without a registry or a container engine, the images every real node of the
// local cluster holds before anything is pulled, as image archives its containerd imports:
//
//   - registry.k8s.io/pause:3.10.1, the Pods' sandbox: Kubernetes' own pause.c (from the pinned module),
//     compiled static by make;
//   - docker.io/library/busybox:1.35.0, a small user image: Debian's static busybox with a link per applet;
//   - docker.io/library/ubuntu:24.04, the walkthrough's user image, stood in for by Debian's bash, dash,
//     coreutils and grep (dynamically linked, so the enforcer preloaded by ld.so.preload loads into them);
//   - docker.io/gpustack/ssh-server:v1.3.0, the Instances' SSH sidecar (instance-ssh-server-image): Debian's
//     OpenSSH server, whose every session gpustack-ssh-server enters into the main container;
//   - localhost/gpustack/enforcer-standin:dev, the soft-slicing enforcers an administrator names in the chart
//     (worker.deviceManager.enforcers.image), here hack/enforcer-standin's stand-in under every vendor's
//     enforcer library names;
//   - registry.k8s.io/kueue/kueue, registry.k8s.io/nfd/node-feature-discovery and
//     docker.io/rancher/local-path-provisioner at the pinned versions, the images Kueue's, NFD's and the
//     local-path provisioner's charts run, from the binaries make tools builds (laid out as their own
//     Dockerfiles lay them out: /manager; nfd-* and local-path-provisioner in /usr/bin), with the C libraries
//     they load.
//
// `make node-images` runs it into bin/images. With --kueue-only it builds the Kueue image alone, from the binary
// it names: make tools builds the previous Kueue's so, into bin/upgrade-from, for test/helm's upgrade.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpustack/gpustack-operator/devicemanager"
	"github.com/gpustack/gpustack-operator/devicemanager/deviceplugin"
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
	kueueVersion := flag.String("kueue-version", "v0.19.2", "the version of the Kueue binary in --bin")
	nfdVersion := flag.String("nfd-version", "v0.19.0", "the version of the NFD binaries in --bin")
	localPathVersion := flag.String("local-path-version", "v0.0.30", "the version of the local-path-provisioner binary in --bin")
	sshImage := flag.String("ssh-server-image", "docker.io/gpustack/ssh-server:v1.3.0", "the SSH sidecar's image name (the setting instance-ssh-server-image)")
	kueueOnly := flag.String("kueue-only", "", "a Kueue binary: build only its image, tagged --kueue-version")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return errors.Wrap(err, "cannot create the output directory")
	}
	platform := v1.Platform{OS: "linux", Architecture: "amd64"}
	kueueRef := "registry.k8s.io/kueue/kueue:" + *kueueVersion
	if *kueueOnly != "" {
		kueue, err := kueueImage(kueueRef, *kueueOnly, platform)
		if err != nil {
			return err
		}
		return write(kueue, *out)
	}
	busyboxFiles, err := busyboxFiles(*busybox)
	if err != nil {
		return err
	}
	kueue, err := kueueImage(kueueRef, filepath.Join(*bin, "kueue"), platform)
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
	user, err := userFiles()
	if err != nil {
		return err
	}
	sshServer, err := sshServerFiles(filepath.Join(*bin, "gpustack-ssh-server"))
	if err != nil {
		return err
	}
	images := []image{
		{realnode.PauseImage, "pause.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{"/pause"}, User: "65535:65535",
			Files: []ociimage.File{{Path: "/pause", Source: filepath.Join(*bin, "pause"), Mode: 0o755}}}},
		{realnode.BusyboxImage, "busybox.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{"/bin/sh"}, User: "0:0", Files: busyboxFiles}},
		kueue,
		{"registry.k8s.io/nfd/node-feature-discovery:" + *nfdVersion, "nfd.tar",
			ociimage.Spec{Platform: platform, Entrypoint: []string{"/usr/bin/nfd-worker"}, User: "65534:65534", Files: dedupe(nfd)}},
		// Its chart runs the command by name: the image's PATH finds it in /usr/bin, as in its Alpine image.
		{"docker.io/rancher/local-path-provisioner:" + *localPathVersion, "local-path-provisioner.tar",
			ociimage.Spec{Platform: platform, Entrypoint: []string{"/usr/bin/local-path-provisioner"}, User: "0:0", Files: localPath}},
		{realnode.UserImage, "user.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{"/bin/bash"}, User: "0:0", Files: user,
			Labels: map[string]string{"org.opencontainers.image.description": "a local stand-in for ubuntu:24.04 (there is no registry here): Debian 12's bash, dash, coreutils and grep"}}},
		{*sshImage, "ssh-server.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{sshServerProgram, "serve"}, User: "0:0", Files: sshServer}},
		{realnode.EnforcerImage, "enforcer-standin.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{"/bin/sh"}, User: "0:0",
			Files: enforcerFiles(filepath.Join(*bin, "enforcer-standin.so"), busyboxFiles)}},
	}
	for _, img := range images {
		if err := write(img, *out); err != nil {
			return err
		}
	}
	return nil
}

// kueueImage is Kueue's image of the binary: its manager and the libraries it loads.
func kueueImage(ref, binary string, platform v1.Platform) (image, error) {
	files, err := withLibraries(ociimage.File{Path: "/manager", Source: binary, Mode: 0o755})
	if err != nil {
		return image{}, err
	}
	return image{ref, "kueue.tar", ociimage.Spec{Platform: platform, Entrypoint: []string{"/manager"}, Files: files}}, nil
}

// write builds an image into its archive in dir.
func write(img image, dir string) error {
	built, err := ociimage.Build(img.spec)
	if err != nil {
		return errors.Wrapf(err, "cannot build %s", img.ref)
	}
	return ociimage.WriteTarball(built, img.ref, filepath.Join(dir, img.file))
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
	list, err := exec.Command(busybox, "--list").Output()
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

// userFiles are the user image's: bash, dash as sh, and a few coreutils and grep, with the C libraries they
// load, and root's passwd entry.
func userFiles() ([]ociimage.File, error) {
	var files []ociimage.File
	for _, b := range []string{"/bin/bash", "/bin/dash", "/bin/cat", "/bin/ls", "/bin/sleep", "/bin/grep", "/bin/mkdir",
		"/usr/bin/env", "/usr/bin/id", "/usr/bin/head", "/usr/bin/true", "/usr/bin/test"} {
		f, err := withLibraries(ociimage.File{Path: b, Source: b, Mode: 0o755})
		if err != nil {
			return nil, err
		}
		files = append(files, f...)
	}
	files = append(files, ociimage.File{Path: "/bin/sh", Link: "dash"}, ociimage.File{Path: "/root/"}, ociimage.File{Path: "/tmp/", Mode: 0o1777},
		ociimage.File{Path: "/etc/passwd", Content: "root:x:0:0:root:/root:/bin/bash\n", Mode: 0o644},
		ociimage.File{Path: "/etc/group", Content: "root:x:0:\n", Mode: 0o644})
	return dedupe(files), nil
}

// sshServerProgram is the sidecar's program (cmd/gpustack-ssh-server) in its image.
const sshServerProgram = "/usr/local/bin/gpustack-ssh-server"

// sshdConfig is the sidecar's sshd configuration: keys only, root only (main runs as root), and every session
// forced through gpustack-ssh-server, which enters it into the main container. Serve adds the workspace path.
const sshdConfig = `Include /etc/ssh/sshd_config.d/*.conf
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
AuthorizedKeysFile /etc/ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# The keys come from a Secret volume, whose files the kubelet owns and links; sshd's ownership checks do not fit it.
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding yes
PidFile /run/sshd.pid
ForceCommand ` + sshServerProgram + ` session
`

// sshServerFiles are the sidecar image's: Debian's sshd with its libraries, dash as the shell sshd runs the
// forced command with, the sidecar's program, and the configuration sshd needs (its privilege separation user
// and directory).
func sshServerFiles(program string) ([]ociimage.File, error) {
	var files []ociimage.File
	for _, b := range []string{"/usr/sbin/sshd", "/bin/dash"} {
		f, err := withLibraries(ociimage.File{Path: b, Source: b, Mode: 0o755})
		if err != nil {
			return nil, errors.Wrap(err, "the SSH sidecar needs Debian's openssh-server (make host-packages)")
		}
		files = append(files, f...)
	}
	files = append(files,
		ociimage.File{Path: "/bin/sh", Link: "dash"},
		ociimage.File{Path: sshServerProgram, Source: program, Mode: 0o755},
		ociimage.File{Path: "/etc/ssh/sshd_config", Content: sshdConfig, Mode: 0o644},
		ociimage.File{Path: "/etc/passwd", Mode: 0o644, Content: "root:x:0:0:root:/root:/bin/sh\nsshd:x:100:65534::/run/sshd:/usr/sbin/nologin\n"},
		ociimage.File{Path: "/etc/group", Mode: 0o644, Content: "root:x:0:\nnogroup:x:65534:\n"},
		ociimage.File{Path: "/run/sshd/"}, ociimage.File{Path: "/root/"})
	return dedupe(files), nil
}

// enforcerMajors are the runtime major versions the stand-in enforcer image holds a directory for, each
// vendor's: an inventory's cards may name any of them (CUDA 13, CANN 8, ROCm 6, HGGC 1, corex 4), and a card
// whose tool reports no runtime version is served from the runtime's bare directory (cann).
const enforcerMajors = 20

// enforcerFiles are the stand-in enforcers' image: for each vendor's enforcer Allocate preloads, and each
// runtime major, the stand-in under each of the enforcer's library names and the ld.so.preload that loads
// them, in the layout of the node's enforcer directory (cuda-13/libvgpu.so, cann-8/libvruntime.so), and busybox
// for the copy.
func enforcerFiles(standIn string, busybox []ociimage.File) []ociimage.File {
	files := append([]ociimage.File(nil), busybox...)
	for _, vendor := range slices.Sorted(maps.Keys(deviceplugin.Enforcers)) {
		e := deviceplugin.Enforcers[vendor]
		for major := range enforcerMajors + 1 {
			dir := path.Join(devicemanager.EnforcerImageDir, e.Runtime)
			if major > 0 {
				dir += "-" + strconv.Itoa(major)
			}
			var preload strings.Builder
			for _, lib := range e.Libraries {
				files = append(files, ociimage.File{Path: path.Join(dir, lib), Source: standIn, Mode: 0o755})
				preload.WriteString(path.Join(deviceplugin.EnforcerContainerDir, lib) + "\n")
			}
			files = append(files, ociimage.File{Path: path.Join(dir, "ld.so.preload"), Content: preload.String(), Mode: 0o644})
		}
	}
	return dedupe(files)
}
