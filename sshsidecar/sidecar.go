// Package sshsidecar is the SSH sidecar of an Instance's Pod (the image gpustack/ssh-server): it starts
// OpenSSH's sshd with the Instance's authorized keys, and every session it forces through Enter, which puts
// the session inside the main container as that container's own processes see it: main's root with all its
// mounts, main's environment (the card visibility and slice budget the device manager's Allocate set) and no
// capability left.
//
// It needs no capability beyond the container runtime's default set. A session reaches main's root through
// /proc/<pid>/root of main's first process (the Pod shares one process namespace), which the kernel allows to
// a process of the same user whose capabilities include all of the target's, and chroot(2) needs only
// CAP_SYS_CHROOT; no setns, so neither SYS_ADMIN nor SYS_PTRACE. The session stays in the sidecar's cgroup,
// whose device rules admit main's cards because the sidecar asks for their visibility resource.
package sshsidecar

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Paths of the sidecar's image and Pod.
const (
	// AuthorizedKeysDir is where the Instance's SSH public key Secret is mounted, one file per key.
	AuthorizedKeysDir = "/var/run/sshd-authorized-keys"
	// AuthorizedKeysFile is the file sshd reads, which Serve writes from AuthorizedKeysDir.
	AuthorizedKeysFile = "/etc/ssh/authorized_keys"
	// WorkspaceEnv names the workspace's mount path, where a session starts.
	WorkspaceEnv = "VOLUME_MOUNT_PATH"
)

// AuthorizedKeys joins the keys of every file in dir, each ending in a newline, in file name order. A
// Secret's volume holds its keys as links to a hidden ..data directory, which are followed; hidden entries are
// skipped. A missing dir is no keys.
func AuthorizedKeys(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err, "cannot list the authorized keys")
	}
	var out bytes.Buffer
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("cannot read authorized key %s: %w", e.Name(), err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		out.Write(data)
		if !bytes.HasSuffix(data, []byte("\n")) {
			out.WriteByte('\n')
		}
	}
	return out.Bytes(), nil
}

// MainProcess returns the pid of the main container's first process in proc, a /proc that shows the Pod's
// shared process namespace. The Pod's processes are the sandbox's (pid 1), this container's and main's; each
// container's are in cgroups of their own, so main's first process is the lowest pid in a cgroup that is
// neither the sandbox's nor this process's (self). A session this sidecar entered into main keeps the
// sidecar's cgroup, so it is never taken for main.
func MainProcess(proc string, self int) (int, error) {
	mine, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(self), "cgroup"))
	if err != nil {
		return 0, wrap(err, "cannot read this process's cgroups")
	}
	sandbox, _ := os.ReadFile(filepath.Join(proc, "1", "cgroup"))
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0, wrap(err, "cannot list the Pod's processes")
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 1 {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	for _, pid := range pids {
		cg, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "cgroup"))
		if err != nil || bytes.Equal(cg, mine) || bytes.Equal(cg, sandbox) {
			continue // gone since listed, or not main's
		}
		return pid, nil
	}
	return 0, errors.New("the main container has no running process: is the Instance's Pod sharing its process namespace, and main running?")
}

// Environ reads a process's environment (/proc/<pid>/environ) as KEY=value entries.
func Environ(proc string, pid int) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "environ"))
	if err != nil {
		return nil, wrap(err, "cannot read the main container's environment")
	}
	var env []string
	for _, kv := range strings.Split(string(data), "\x00") {
		if strings.Contains(kv, "=") {
			env = append(env, kv)
		}
	}
	return env, nil
}

// SessionSettings is the sshd configuration that hands every session the workspace's path.
func SessionSettings(workspace string) string {
	if workspace == "" {
		return ""
	}
	return "SetEnv " + WorkspaceEnv + "=" + strconv.Quote(workspace) + "\n"
}

// sessionVars are the variables sshd sets for a session that the session keeps over main's.
var sessionVars = []string{"TERM", "SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "SSH_AUTH_SOCK", "LANG", "LC_ALL"}

// SessionEnv is the environment of a session: main's, with the session's own terminal and connection
// variables from sshd (session) over it, and HOME defaulting to /root (main runs as root).
func SessionEnv(main, session []string) []string {
	vars := map[string]string{}
	var order []string
	put := func(kv string) {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range main {
		put(kv)
	}
	for _, kv := range session {
		k, _, _ := strings.Cut(kv, "=")
		for _, keep := range sessionVars {
			if k == keep {
				put(kv)
			}
		}
	}
	if _, ok := vars["HOME"]; !ok {
		put("HOME=/root")
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// Command is what a session runs in main's root: the client's command (SSH_ORIGINAL_COMMAND) through the
// shell, else a login shell. shell is the first of bash and sh that main's image has.
func Command(shell, original string) []string {
	if original != "" {
		return []string{shell, "-c", original}
	}
	return []string{shell, "-l"}
}

// Shell returns the first of /bin/bash and /bin/sh under root.
func Shell(root string) (string, error) {
	for _, sh := range []string{"/bin/bash", "/bin/sh"} {
		if fi, err := os.Stat(filepath.Join(root, sh)); err == nil && !fi.IsDir() {
			return sh, nil
		}
	}
	return "", errors.New("the main container's image has no /bin/bash or /bin/sh for the session")
}

// wrap prefixes err with msg, and is nil for a nil err. The sidecar's program imports only the standard
// library and x/sys, which keeps its image small.
func wrap(err error, msg string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", msg, err)
}
