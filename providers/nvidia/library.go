package nvidia

import (
	"os"
	"path/filepath"
)

// DriverRoots are where the agent looks for the NVIDIA driver's NVML library, in order, through its read-only
// mount of the node's root at /host: the GPU Operator's containerized driver, then the host's own install.
var DriverRoots = []string{"/host/run/nvidia/driver", "/host"}

// libraryDirs are the library directories of the distributions NVIDIA ships its driver for.
var libraryDirs = []string{"usr/lib64", "usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "lib64", "usr/lib"}

// LibraryName is NVML's shared library.
const LibraryName = "libnvidia-ml.so.1"

// FindLibrary returns the path of NVML's library under the first root that has one; "" when none has, and
// the library is then loaded as the container's own loader finds it (where a runtime hook put it).
func FindLibrary(roots []string) string {
	for _, root := range roots {
		for _, dir := range libraryDirs {
			path := filepath.Join(root, dir, LibraryName)
			if _, err := os.Stat(path); err == nil {
				return path
			}
		}
	}
	return ""
}
