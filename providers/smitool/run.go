package smitool

import (
	"bytes"
	"context"
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
