package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"golang.org/x/sync/errgroup"
)

// process is one component of the cluster running as a child process, with its log in <dir>/logs/<name>.log
// and its process ID in <dir>/pids/<name>.pid, so that `localcluster down` can stop it from another process.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startProcess starts a component. A detached component gets its own session so it outlives the command
// that started it (make demo); an attached one dies with its parent (tests).
func startProcess(dir, name string, detach bool, env []string, argv ...string) (*process, error) {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, errors.Wrap(err, "cannot create log directory")
	}
	if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o755); err != nil {
		return nil, errors.Wrap(err, "cannot create pid directory")
	}
	// Appended: a component the fault suite restarts keeps the log of its first life.
	logf, err := os.OpenFile(filepath.Join(dir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot open log of %s", name)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, errors.Wrapf(err, "cannot start %s", name)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	pidFile := filepath.Join(dir, "pids", name+".pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return nil, errors.Wrap(err, "cannot record process id")
	}
	return p, nil
}

// supervised wraps a command line in a loop that starts it again a second after it exits, as the kubelet
// restarts a control plane's static Pod. kube-scheduler exits on purpose when it finds its cache inconsistent
// (it can, after etcd and the API server restart under load), and a cluster without it stops scheduling for
// good. The loop's shell leads the component's process group, so stopping the group stops both; setpriv ends
// the component if the shell is killed alone.
func supervised(argv ...string) []string {
	const loop = `while :; do setpriv --pdeathsig KILL -- "$@"; echo "` + restartLine + `$1 exited ($?); starting it again" >&2; sleep 1; done`
	return append([]string{"/bin/sh", "-c", loop, "sh"}, argv...)
}

// restartLine begins the line a supervised component's loop logs each time it starts the component again.
const restartLine = "localcluster: "

// restarts is how many times a supervised component's loop started it again, as its log says.
func restarts(dir, name string) int {
	data, err := os.ReadFile(filepath.Join(dir, "logs", name+".log"))
	if err != nil {
		return 0
	}
	n := 0
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, restartLine) && strings.Contains(line, "; starting it again") {
			n++
		}
	}
	return n
}

// exited returns an error describing the component's exit, or nil while it still runs.
func (p *process) exited(dir string) error {
	select {
	case <-p.done:
		return errors.Errorf("%s exited (%v); its log ends with:\n%s", p.name, p.err, logTail(dir, p.name, 20))
	default:
		return nil
	}
}

// logTail returns the last n lines of a component's log.
func logTail(dir, name string, n int) string {
	data, err := os.ReadFile(filepath.Join(dir, "logs", name+".log"))
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// stopRecorded stops every component recorded under <dir>/pids, newest first, and waits for each to exit.
// It is what `localcluster down` runs, and it is safe to run when nothing is running.
func stopRecorded(dir string, order []string) ([]string, error) {
	var stopped []string
	var failed []string
	for _, name := range order {
		pidFile := filepath.Join(dir, "pids", name+".pid")
		data, err := os.ReadFile(pidFile)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 1 {
			_ = os.Remove(pidFile)
			continue
		}
		if stopPID(pid) {
			stopped = append(stopped, fmt.Sprintf("%s (%d)", name, pid))
		}
		if alive(pid) {
			failed = append(failed, name)
			continue
		}
		_ = os.Remove(pidFile)
	}
	if len(failed) > 0 {
		return stopped, errors.Errorf("could not stop %s", strings.Join(failed, ", "))
	}
	return stopped, nil
}

// stopPID sends SIGTERM to the process group of pid, then SIGKILL after ten seconds. It reports whether a
// process was running.
func stopPID(pid int) bool {
	if !alive(pid) {
		return false
	}
	// Components run in their own process group (Setpgid or Setsid), so the group ID is the pid; killing the
	// group also ends helpers such as the shell that unshare runs for Kueue.
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for alive(pid) {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			time.Sleep(200 * time.Millisecond)
			return true
		case <-time.After(100 * time.Millisecond):
		}
	}
	return true
}

// alive reports whether pid is a running process (a zombie counts as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state is the field after the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndex(s, ")"); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// parallel runs do for 0..n-1 on a few goroutines and returns the first error: creating thousands of nodes or
// tokens one request at a time would take minutes.
func parallel(ctx context.Context, n int, do func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error { return do(ctx, i) })
	}
	return g.Wait()
}
