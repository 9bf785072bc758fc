package sshsidecar

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// SSHD is OpenSSH's server in the sidecar's image, its configuration, and the file of that configuration
// (which includes it) that Serve writes.
const (
	SSHD          = "/usr/sbin/sshd"
	SSHDConfig    = "/etc/ssh/sshd_config"
	SessionConfig = "/etc/ssh/sshd_config.d/session.conf"
)

// Serve writes the authorized keys sshd reads, and hands the sessions the workspace's path (sshd gives a
// session none of its own environment), then replaces this process with sshd in the foreground, logging to
// its standard error (the container's log).
func Serve() error {
	keys, err := AuthorizedKeys(AuthorizedKeysDir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(AuthorizedKeysFile, keys, 0o600); err != nil {
		return wrap(err, "cannot write the authorized keys")
	}
	if err := os.MkdirAll(filepath.Dir(SessionConfig), 0o755); err != nil {
		return wrap(err, "cannot write the session configuration")
	}
	if err := os.WriteFile(SessionConfig, []byte(SessionSettings(os.Getenv(WorkspaceEnv))), 0o644); err != nil {
		return wrap(err, "cannot write the session configuration")
	}
	return wrap(syscall.Exec(SSHD, []string{SSHD, "-D", "-e", "-f", SSHDConfig}, os.Environ()), "cannot start sshd")
}

// Enter replaces this process, an SSH session sshd forced here, with the session's command inside the main
// container: main's root, main's environment, the workspace as working directory, and no capability, in the
// bounding set either, so nothing the session runs can gain one.
func Enter() error {
	pid, err := MainProcess("/proc", os.Getpid())
	if err != nil {
		return err
	}
	mainEnv, err := Environ("/proc", pid)
	if err != nil {
		return err
	}
	env := SessionEnv(mainEnv, os.Environ())
	original := os.Getenv("SSH_ORIGINAL_COMMAND")
	workspace := os.Getenv(WorkspaceEnv)

	// Capabilities are a thread's: the drop and the exec happen on this one thread.
	runtime.LockOSThread()
	if err := unix.Chroot("/proc/" + strconv.Itoa(pid) + "/root"); err != nil {
		return wrap(err, "cannot enter the main container's root")
	}
	if err := unix.Chdir("/"); err != nil {
		return wrap(err, "cannot enter the main container's root")
	}
	if workspace != "" {
		_ = unix.Chdir(workspace) // a session still starts at / if the workspace is gone
	}
	shell, err := Shell("/")
	if err != nil {
		return err
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	argv := Command(shell, original)
	return wrap(unix.Exec(argv[0], argv, env), "cannot run "+argv[0]+" in the main container")
}

// dropCapabilities empties this thread's bounding, ambient, inheritable, permitted and effective sets.
func dropCapabilities() error {
	for c := 0; ; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) && c > 0 {
				break // past the kernel's last capability
			}
			return fmt.Errorf("cannot drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return wrap(err, "cannot clear the ambient capabilities")
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return wrap(unix.Capset(&hdr, &data[0]), "cannot drop the session's capabilities")
}
