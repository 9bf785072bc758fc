package ociimage

import (
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// DefaultLibraryDirs are where a Debian or Ubuntu machine keeps the C library and its kin.
var DefaultLibraryDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// SharedLibraries returns what a dynamically linked binary needs from this machine to start in an empty
// image: its ELF interpreter and every library it names, and the libraries those name, found in dirs and
// placed in the image at the path they were found under. A static binary needs nothing. Libraries the
// binary opens at run time (NVML, which the NVIDIA container runtime mounts) are not named, so not included.
func SharedLibraries(binary string, dirs []string) ([]File, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s as ELF", binary)
	}
	defer f.Close()
	var out []File
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			return nil, errors.Wrapf(err, "cannot read the interpreter of %s", binary)
		}
		interp := string(data[:len(data)-1])
		src, err := filepath.EvalSymlinks(interp)
		if err != nil {
			return nil, errors.Wrapf(err, "interpreter %s of %s", interp, binary)
		}
		out = append(out, File{Path: interp, Source: src, Mode: 0o755})
	}
	if len(out) == 0 {
		return nil, nil
	}
	seen := map[string]bool{}
	queue, err := f.ImportedLibraries()
	if err != nil {
		return nil, errors.Wrapf(err, "cannot list the libraries %s needs", binary)
	}
	for len(queue) > 0 {
		lib := queue[0]
		queue = queue[1:]
		if seen[lib] {
			continue
		}
		seen[lib] = true
		found, err := findLibrary(lib, dirs)
		if err != nil {
			return nil, errors.Wrapf(err, "%s needs %s", binary, lib)
		}
		src, err := filepath.EvalSymlinks(found)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: found, Source: src, Mode: 0o755})
		needed, err := importedBy(src)
		if err != nil {
			return nil, err
		}
		queue = append(queue, needed...)
	}
	return out, nil
}

func findLibrary(lib string, dirs []string) (string, error) {
	for _, d := range dirs {
		p := path.Join(d, lib)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("not found in " + fmt.Sprint(dirs))
}

func importedBy(file string) ([]string, error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s as ELF", file)
	}
	defer f.Close()
	return f.ImportedLibraries()
}
