package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/gpustack/gpustack-operator/test/framework/ports"
)

// Kubectl runs kubectl against the cluster of kubeconfig and returns what it printed on stdout (its warnings and
// a container's stderr under exec are not the answer); an error carries both.
func Kubectl(kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", errors.Errorf("kubectl %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out), nil
}

// Eventually polls cond until it holds, failing the test with cond's last message after timeout.
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not after %s: %s", timeout, msg)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// FreePort returns a port that was free a moment ago (ports.Free).
func FreePort(t testing.TB) string {
	t.Helper()
	p, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(p[0])
}

// LastLines returns the last n lines of a log, for a failure message.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
