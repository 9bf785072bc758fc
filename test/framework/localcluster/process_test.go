package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// TestSupervisedStartsAgain holds what the control plane's kube-scheduler and kube-controller-manager rely on:
// a supervised component that exits is started again, and stopping its process group stops it for good.
func TestSupervisedStartsAgain(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess(dir, "flaky", false, nil, supervised("/bin/sh", "-c", "echo life; exit 3")...)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "logs", "flaky.log")
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(log)
		if strings.Count(string(data), "life") >= 2 {
			if !strings.Contains(string(data), "/bin/sh exited (3); starting it again") {
				t.Errorf("the supervisor logged no exit between two lives:\n%s", data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a supervised component that exited was not started again within 30s; its log:\n%s", data)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := p.exited(dir); err != nil {
		t.Errorf("the supervisor itself exited: %v", err)
	}
	c := &Cluster{cfg: Config{Dir: dir}, procs: []*process{p}}
	err = c.waitFor(t.Context(), "flaky", 10*time.Millisecond, func(context.Context) error { return errors.New("no answer") })
	if err == nil || !strings.Contains(err.Error(), "flaky has exited and been started again") || !strings.Contains(err.Error(), "life") {
		t.Errorf("waitFor on a crash-looping component: %v, want its restarts and its log's tail", err)
	}
	if !stopPID(p.cmd.Process.Pid) {
		t.Errorf("stopPID found the supervisor not running")
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the supervisor still runs after its process group was stopped")
	}
	data, _ := os.ReadFile(log)
	lives := strings.Count(string(data), "life")
	time.Sleep(1500 * time.Millisecond)
	if data, _ := os.ReadFile(log); strings.Count(string(data), "life") != lives {
		t.Errorf("the component started again after its process group was stopped:\n%s", data)
	}
}
