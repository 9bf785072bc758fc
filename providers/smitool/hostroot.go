package smitool

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// HostToolDirs are where a node's vendor tools are looked for in its root (HostRunner.Root): the standard
// command directories, then where each vendor's driver package installs its tool (ROCm, the Ascend driver,
// Cambricon's Neuware, Hygon's DCU stack, Iluvatar's CoreX, MetaX's driver), for a tool not on the root's PATH.
var HostToolDirs = []string{
	"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
	"/opt/rocm/bin", "/usr/local/Ascend/driver/tools", "/usr/local/neuware/bin", "/opt/hyhal/bin",
	"/usr/local/corex/bin", "/opt/mxdriver/bin",
}

// hostTool returns the path, inside root, of the tool's executable in the first of dirs that holds one; ""
// when none does.
func hostTool(root, name string, dirs []string) string {
	if strings.ContainsRune(name, '/') {
		return ""
	}
	for _, d := range dirs {
		info, err := os.Stat(filepath.Join(root, d, name))
		if err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return filepath.Join(d, name)
		}
	}
	return ""
}

// scratchDir makes a working directory for one tool run inside root's scratch directory, where a tool run in
// root can write (the agent mounts it writable); it returns the path inside root and the agent's path of it.
func scratchDir(root, scratch string) (string, string, error) {
	if err := os.MkdirAll(filepath.Join(root, scratch), 0o700); err != nil {
		return "", "", errors.Wrap(err, "cannot create the tools' scratch directory")
	}
	outside, err := os.MkdirTemp(filepath.Join(root, scratch), "run-")
	if err != nil {
		return "", "", errors.Wrap(err, "cannot create a working directory for the tool")
	}
	return filepath.Join(scratch, filepath.Base(outside)), outside, nil
}

// moveFiles moves the regular files a tool left in from into to, where its caller reads them.
func moveFiles(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return errors.Wrap(err, "cannot read what the tool left")
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return errors.Wrap(err, "cannot read what the tool left")
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			return errors.Wrap(err, "cannot keep what the tool left")
		}
	}
	return nil
}
