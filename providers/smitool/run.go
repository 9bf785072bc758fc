package smitool

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Command is one run of a tool.
type Command struct {
	// Dir is the working directory; the agent's when empty. Some tools write their report into it.
	Dir string
	// Name is the tool, looked up in PATH.
	Name string
	// Args are its arguments.
	Args []string
}

// String writes the command as a shell would show it.
func (c Command) String() string { return strings.TrimSpace(c.Name + " " + strings.Join(c.Args, " ")) }

// Runner runs a tool and returns what it printed on stdout.
type Runner interface {
	Run(ctx context.Context, cmd Command) ([]byte, error)
}

// DefaultTimeout bounds one tool run: a tool hung on a wedged driver must not stall the agent.
const DefaultTimeout = 20 * time.Second

// maxOutput bounds what a tool may print; a tool that prints more is broken.
const maxOutput = 8 << 20

// ExecRunner runs tools as processes.
type ExecRunner struct {
	// Timeout bounds each run; DefaultTimeout when zero.
	Timeout time.Duration
	// Root is the node's root filesystem as the agent sees it (/host), where the vendors' drivers install their
	// tools; empty runs tools from the agent's own PATH only. A tool the agent's PATH lacks and one of
	// HostToolDirs under Root holds runs chrooted into Root, with the node's libraries and interpreters, as
	// `chroot /host tool` would.
	Root string
	// Scratch is a directory inside Root that the agent may write (a writable mount over Root's read-only
	// view), where a tool run in Root works when its command names a working directory; the files it leaves
	// there are moved to that directory.
	Scratch string
}

// Run runs the command in its own process group and kills the whole group when the timeout passes, so a
// tool's children cannot keep it alive either.
func (r ExecRunner) Run(ctx context.Context, c Command) ([]byte, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// exec.Command already looked the tool up in the agent's PATH; cmd.Err says it is not there.
	if cmd.Err != nil && r.Root != "" {
		if path := hostTool(r.Root, c.Name, HostToolDirs); path != "" {
			done, err := r.inRoot(cmd, path, c.Dir)
			if err != nil {
				return nil, errors.Wrapf(err, "%s", c)
			}
			defer func() { _ = done() }()
		}
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var stdout limitedBuffer
	var stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, errors.Errorf("%s: no answer within %s", c, timeout)
	case errors.Is(err, exec.ErrNotFound):
		return nil, errors.Wrapf(err, "%s: the tool is not installed", c.Name)
	case stdout.overflow:
		return nil, errors.Errorf("%s: printed more than %d bytes", c, maxOutput)
	case err != nil:
		if msg := firstLine(stderr.buf.String()); msg != "" {
			return nil, errors.Errorf("%s: %w: %s", c, err, msg)
		}
		return nil, errors.Wrapf(err, "%s", c)
	}
	return stdout.buf.Bytes(), nil
}

// inRoot makes cmd run the tool at path (inside Root) chrooted into Root, in a scratch directory when the
// command names a working directory; done then moves what the tool left there to dir, and removes it.
func (r ExecRunner) inRoot(cmd *exec.Cmd, path, dir string) (func() error, error) {
	cmd.Path, cmd.Err = path, nil
	cmd.SysProcAttr.Chroot = r.Root
	cmd.Dir = "/"
	if dir == "" {
		return func() error { return nil }, nil
	}
	inside, outside, err := scratchDir(r.Root, r.Scratch)
	if err != nil {
		return nil, err
	}
	cmd.Dir = inside
	return func() error {
		defer func() { _ = os.RemoveAll(outside) }()
		return moveFiles(outside, dir)
	}, nil
}

// limitedBuffer keeps the first maxOutput bytes and remembers that more came. It does not embed bytes.Buffer:
// io.Copy would find the buffer's ReadFrom and bypass the limit.
type limitedBuffer struct {
	buf      bytes.Buffer
	overflow bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.buf.Len(); len(p) > room {
		b.overflow = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
